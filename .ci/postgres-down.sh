#!/bin/bash
# Stop the server of .ci/postgres-up.sh DIR (and leave DIR for the caller to remove).
set -uo pipefail
DIR=${1:?usage: postgres-down.sh DIR}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -f "$DIR/data/postmaster.pid" ] || exit 0
if [ "$(id -un)" = postgres ]; then
  "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >&2
else
  runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >&2
fi
