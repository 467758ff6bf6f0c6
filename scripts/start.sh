#!/bin/sh
# Container entry: with HP_SHARED_KEY (HaRP), start frpc, which connects the
# unix socket /tmp/exapp.sock to HaRP; then run the ExApp in the foreground.
set -eu
if [ -n "${HP_SHARED_KEY:-}" ]; then
  config="${FRPC_CONFIG:-/tmp/frpc.toml}"
  cat > "$config" <<CONF
serverAddr = "${HP_FRP_ADDRESS:-harp}"
serverPort = ${HP_FRP_PORT:-8782}
loginFailExit = false
transport.tls.enable = false
auth.method = "token"
auth.token = "${HP_SHARED_KEY}"

[[proxies]]
name = "${APP_ID}"
type = "tcp"
remotePort = ${APP_PORT}
[proxies.plugin]
type = "unix_domain_socket"
unixPath = "/tmp/exapp.sock"
CONF
  chmod 0600 "$config"
  frpc -c "$config" &
fi
exec "$@"
