#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 with a database
# "test", installing and starting it where needed, and prints the URL the
# tests should use. Idempotent; safe to run on every `make test`.
set -euo pipefail

URL_TRUST="postgres://postgres@127.0.0.1:5432/test"
URL_PASSWORD="postgres://postgres:educai-test@127.0.0.1:5432/test"

# Root runs the installs and the cluster as it is; anyone else through sudo, like ensure-radicale.sh and
# ensure-chromium.sh (the postgres user itself needs neither to start its cluster).
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
need_sudo() {
  if [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then
    echo "ensure-postgres: $1 needs root or sudo; run it as root, or point TEST_DATABASE_URL at a PostgreSQL database" >&2
    exit 1
  fi
}
as_postgres() {
  if [ "$(id -un)" = postgres ]; then sh -c "$*"
  elif [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"
  else need_sudo "running psql as the postgres user"; sudo -u postgres sh -c "$*"; fi
}

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "installing PostgreSQL from Debian's packages" >&2
  need_sudo "installing PostgreSQL"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq postgresql >&2
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "starting PostgreSQL $version" >&2
  if [ "$(id -un)" = postgres ]; then
    pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
  else
    need_sudo "starting PostgreSQL"
    $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
  fi
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
fi

if psql "postgres://postgres@127.0.0.1:5432/postgres" -Atc 'select 1' >/dev/null 2>&1; then
  url_base="postgres://postgres@127.0.0.1:5432"; url="$URL_TRUST"
else
  # The cluster asks for a password on TCP (scram): give the postgres role one over the local socket.
  as_postgres "psql -q -c \"alter user postgres password 'educai-test'\"" >&2
  url_base="postgres://postgres:educai-test@127.0.0.1:5432"; url="$URL_PASSWORD"
fi

if [ "$(psql "$url_base/postgres" -Atc "select 1 from pg_database where datname = 'test'")" != 1 ]; then
  psql "$url_base/postgres" -q -c 'create database test' >&2
fi
# Leftover schemas of earlier test runs (tests never drop them while others run).
psql "$url" -q -At -c "select 'drop schema if exists ' || quote_ident(nspname) || ' cascade;' from pg_namespace where nspname like 't\\_%'" 2>/dev/null | psql "$url" -q >/dev/null 2>&1 || true
echo "$url"
