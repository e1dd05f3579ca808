#!/bin/bash
# The official image's first start, for the settings compose.yaml uses: an empty data
# directory is initialised with POSTGRES_USER's password (SCRAM for every network client),
# POSTGRES_DB is created, then the server runs in the foreground as the postgres user.
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
[ "${1:-}" = postgres ] && shift
user=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
  pw=$(mktemp) && printf %s "$POSTGRES_PASSWORD" > "$pw"
  # UTF8 as the official image (minbase has no locale set: initdb would pick SQL_ASCII,
  # which refuses every non-ASCII character a client sends)
  # shellcheck disable=SC2086
  "$bin/initdb" -D "$PGDATA" -U "$user" --pwfile="$pw" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 ${POSTGRES_INITDB_ARGS:-} >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    "$bin/psql" -v ON_ERROR_STOP=1 -U "$user" -d postgres -q -c "CREATE DATABASE \"$db\""
    "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
  fi
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
