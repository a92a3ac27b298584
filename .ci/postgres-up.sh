#!/bin/bash
# A throwaway PostgreSQL server for the ledger tests: initdb + pg_ctl as the
# `postgres` OS user, on 127.0.0.1:PORT, data and socket under DIR.
#   .ci/postgres-up.sh DIR PORT      prints the ledger URL on its last line
#   .ci/postgres-down.sh DIR         stops it
# Installs Debian's postgresql when no server binaries are found (root only).
set -euo pipefail
DIR=${1:?usage: postgres-up.sh DIR PORT}
PORT=${2:?usage: postgres-up.sh DIR PORT}
DBUSER=campaign
DBPASS=campaign-test
DB=ledger

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
BIN=$(bindir)
if [ -z "$BIN" ] || [ ! -x "$BIN/postgres" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing postgresql (Debian)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql) >&2
    BIN=$(bindir)
  fi
fi
[ -n "$BIN" ] && [ -x "$BIN/postgres" ] || { echo "postgres-up: no PostgreSQL server binaries" >&2; exit 3; }
id postgres >/dev/null 2>&1 || { echo "postgres-up: no 'postgres' OS user" >&2; exit 3; }

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }

mkdir -p "$DIR"
chown postgres: "$DIR"
chmod 700 "$DIR"
if [ ! -f "$DIR/data/PG_VERSION" ]; then
  as_pg "$BIN/initdb" -D "$DIR/data" --auth-local=trust --auth-host=scram-sha-256 -U postgres --no-sync >"$DIR/initdb.log" 2>&1 \
    || { cat "$DIR/initdb.log" >&2; exit 3; }
fi
as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off" start >&2 \
  || { cat "$DIR/server.log" >&2; exit 3; }
PSQL=("$BIN/psql" -h "$DIR" -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt)
if [ "$(as_pg "${PSQL[@]}" -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname='$DBUSER'")" != 1 ]; then
  as_pg "${PSQL[@]}" -d postgres -c "CREATE ROLE $DBUSER LOGIN CREATEDB PASSWORD '$DBPASS'"
  as_pg "${PSQL[@]}" -d postgres -c "CREATE DATABASE $DB OWNER $DBUSER"
fi
echo "postgresql+psycopg://$DBUSER:$DBPASS@127.0.0.1:$PORT/$DB"
