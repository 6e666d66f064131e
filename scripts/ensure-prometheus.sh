#!/usr/bin/env bash
# Makes sure `promtool` and `prometheus` (Debian package `prometheus`) are installed for the
# metrics tests, which start a Prometheus server of their own on a free port. Idempotent.
# The package's own service (port 9090) is stopped and disabled if the install started it:
# nothing here needs it, and it would scrape and listen for no one.
set -euo pipefail
if command -v promtool >/dev/null && command -v prometheus >/dev/null; then exit 0; fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "prometheus: installing the Debian package (promtool and the server) for the metrics tests" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  $sudo systemctl disable --now prometheus || true
elif command -v service >/dev/null && service prometheus status >/dev/null 2>&1; then
  $sudo service prometheus stop || true
fi
if command -v update-rc.d >/dev/null; then $sudo update-rc.d prometheus disable >/dev/null 2>&1 || true; fi
command -v promtool >/dev/null && command -v prometheus >/dev/null
