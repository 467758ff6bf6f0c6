#!/usr/bin/env bash
# Starts the real Nextcloud 33 test server for `make test-nextcloud` and prints its `export` lines.
# The server package is ../shared/nextcloud beside the repository (NEXTCLOUD_TEST_PACKAGE overrides it);
# it is installed into NEXTCLOUD_TEST_DIR and listens on 127.0.0.1:NEXTCLOUD_TEST_PORT. setup.sh is
# idempotent: a second run keeps the install, its users and their data, and only starts what is down.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkg=${NEXTCLOUD_TEST_PACKAGE:-$root/../shared/nextcloud}
dir=${NEXTCLOUD_TEST_DIR:-/tmp/educai-nextcloud-test}
port=${NEXTCLOUD_TEST_PORT:-8089}
if [ ! -f "$pkg/setup.sh" ] || [ ! -f "$pkg/nextcloud-33.tar.zst" ]; then
  echo "make test-nextcloud: no Nextcloud test server package in $pkg (setup.sh and nextcloud-33.tar.zst); set NEXTCLOUD_TEST_PACKAGE to its folder" >&2
  exit 1
fi
bash "$pkg/setup.sh" "$dir" "$port" | grep '^export '
