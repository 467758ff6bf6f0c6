#!/bin/sh
# Docker HEALTHCHECK: /heartbeat over the unix socket (HaRP) or TCP.
set -eu
if [ -n "${HP_SHARED_KEY:-}" ]; then
  exec curl -fsS --max-time 4 --unix-socket /tmp/exapp.sock http://localhost/heartbeat
fi
exec curl -fsS --max-time 4 "http://127.0.0.1:${APP_PORT:-23000}/heartbeat"
