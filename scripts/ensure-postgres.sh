#!/usr/bin/env bash
# Makes sure PostgreSQL answers on 127.0.0.1:5432; starts the local Debian cluster if it is down.
set -euo pipefail
host=${PGHOST_CHECK:-127.0.0.1}
port=${PGPORT_CHECK:-5432}
if pg_isready -q -h "$host" -p "$port"; then exit 0; fi
echo "postgres: not answering on $host:$port; starting the local cluster" >&2
if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
  for version in $(ls /etc/postgresql); do
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  done
fi
for _ in $(seq 1 60); do
  pg_isready -q -h "$host" -p "$port" && { echo "postgres: ready" >&2; exit 0; }
  sleep 0.5
done
echo "postgres: still not answering on $host:$port; start PostgreSQL 15+ or set DATABASE_URL" >&2
exit 1
