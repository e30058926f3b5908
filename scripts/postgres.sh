#!/usr/bin/env bash
# Makes sure a Postgres server the tests can use answers on 127.0.0.1:${MKQ_PG_PORT:-5432}, with
# user `postgres` (no password) and a database `test`.
#
# A server already there is used when it lets `postgres` in without a password. Otherwise this
# starts a private cluster of its own (initdb with trust authentication on loopback only, data in
# MKQ_PG_DIR), so nothing depends on how the machine's packaged cluster is configured. Postgres'
# binaries come from Debian's `postgresql` package (installed here when missing and root).
#   bash scripts/postgres.sh          start (idempotent)
#   bash scripts/postgres.sh stop     stop the private cluster, if this script started one
set -euo pipefail
port=${MKQ_PG_PORT:-5432}
if [ "$(id -u)" = 0 ]; then
  data=${MKQ_PG_DIR:-/var/lib/postgresql/mkq-test}
else
  data=${MKQ_PG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mkq/postgres}
fi

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  command -v initdb >/dev/null && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

# Runs a Postgres binary as the cluster's owner: initdb and postgres refuse to run as root.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

usable() {
  "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -w -Atqc 'select 1' >/dev/null 2>&1
}

if ! bin=$(pg_bin); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing Debian's postgresql" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
    bin=$(pg_bin)
  else
    echo "Postgres is not installed: install Debian's 'postgresql' package (apt-get install postgresql)," >&2
    echo "or point MKQ_TEST_DATABASE_URL at a server of yours" >&2
    exit 1
  fi
fi

if [ "${1:-start}" = stop ]; then
  if [ -f "$data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  fi
  exit 0
fi

if ! usable; then
  if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    echo "A Postgres on 127.0.0.1:$port does not let user 'postgres' in without a password;" >&2
    echo "stop it, set MKQ_PG_PORT to a free port, or set MKQ_TEST_DATABASE_URL" >&2
    exit 1
  fi
  if [ "$(id -u)" = 0 ] && ! getent passwd postgres >/dev/null; then
    useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  fi
  mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown postgres: "$data" && chmod 700 "$data"
  if [ ! -f "$data/PG_VERSION" ]; then
    as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-locale >/dev/null
  fi
  # Loopback only; the socket sits in the data directory so no system directory is needed.
  as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $data -c max_connections=300 -c fsync=off" \
    start >/dev/null || { tail -n 20 "$data/server.log" >&2; exit 1; }
fi
if ! usable; then
  echo "Postgres on 127.0.0.1:$port did not come up; see $data/server.log" >&2
  exit 1
fi
if [ -z "$("$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -w -Atqc \
  "select 1 from pg_database where datname = 'test'")" ]; then
  "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -w -qc 'create database test' >/dev/null
fi
