#!/usr/bin/env bash
# Starts the machine's Postgres cluster when it is not accepting connections.
set -euo pipefail
if command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; then
  exit 0
fi
if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 30); do
    pg_isready -q -h 127.0.0.1 -p 5432 && exit 0
    sleep 1
  done
fi
echo "Postgres is not reachable on 127.0.0.1:5432; start it, or set MKQ_TEST_DATABASE_URL" >&2
exit 1
