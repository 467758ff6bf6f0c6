#!/usr/bin/env bash
# Makes sure Debian's radicale (a real CalDAV server for the calendar tests) is installed.
# Idempotent; safe to run on every `make test`. The tests start and stop it themselves.
set -euo pipefail

if command -v radicale >/dev/null 2>&1 && radicale --version >/dev/null 2>&1; then
  exit 0
fi

echo "installing radicale from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq radicale >&2
radicale --version >/dev/null
