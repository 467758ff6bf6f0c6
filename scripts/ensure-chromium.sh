#!/usr/bin/env bash
# Makes sure Debian's chromium (driven by playwright-core in test/ui/) is installed.
# Idempotent; safe to run on every `make test`. Never `npx playwright install`: the tests use /usr/bin/chromium.
set -euo pipefail

if [ -x /usr/bin/chromium ] && /usr/bin/chromium --headless --no-sandbox --version >/dev/null 2>&1; then
  exit 0
fi

echo "installing chromium from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
/usr/bin/chromium --headless --no-sandbox --version >/dev/null
