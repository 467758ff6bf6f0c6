#!/bin/sh
# Container entry: with HP_SHARED_KEY (HaRP), start frpc, which connects the
# unix socket /tmp/exapp.sock to HaRP; then run the ExApp in the foreground.
set -eu
# HaRP installs its FRP client certificates here (docker exec + archive upload),
# and the CAs Nextcloud trusts next to Debian's own.
certs="${FRP_CERTS_DIR:-/certs/frp}"
custom_cas="${EXTRA_CA_DIR:-/usr/local/share/ca-certificates}"

if [ -n "${HP_SHARED_KEY:-}" ]; then
  config="${FRPC_CONFIG:-/tmp/frpc.toml}"
  # HaRP's frps authenticates the login through its agent, which reads only the
  # client's metadatas.token; it forces TLS with client certificates unless
  # HaRP runs with HP_FRP_DISABLE_TLS, in which case no certificates arrive.
  if [ -s "$certs/client.crt" ] && [ -s "$certs/client.key" ] && [ -s "$certs/ca.crt" ]; then
    tls="transport.tls.enable = true
transport.tls.certFile = \"$certs/client.crt\"
transport.tls.keyFile = \"$certs/client.key\"
transport.tls.trustedCaFile = \"$certs/ca.crt\"
transport.tls.serverName = \"harp.nc\""
  else
    tls="transport.tls.enable = false"
  fi
  umask 077
  cat > "$config" <<CONF
serverAddr = "${HP_FRP_ADDRESS:-harp}"
serverPort = ${HP_FRP_PORT:-8782}
loginFailExit = false
metadatas.token = "${HP_SHARED_KEY}"
${tls}

[[proxies]]
name = "${APP_ID}"
type = "tcp"
remotePort = ${APP_PORT}
[proxies.plugin]
type = "unix_domain_socket"
unixPath = "/tmp/exapp.sock"
CONF
  umask 022
  frpc -c "$config" &
fi

# Node reads only its own CA list: the CAs installed for Nextcloud (HaRP's
# system_certs_bundle) must be handed to it, or a Nextcloud behind a private CA
# is unreachable.
extra="${NODE_EXTRA_CA_FILE:-/tmp/educai-extra-ca.pem}"
found=""
for ca in ${NODE_EXTRA_CA_CERTS:-} "$custom_cas"/*.crt; do
  [ -f "$ca" ] && [ "$ca" != "$extra" ] || continue
  if [ -z "$found" ]; then : > "$extra"; found=1; fi
  cat "$ca" >> "$extra"
  echo >> "$extra"
done
if [ -n "$found" ]; then export NODE_EXTRA_CA_CERTS="$extra"; fi
exec "$@"
