#!/usr/bin/env bash
# The Prometheus pull tests run a real Prometheus (Debian's package). The tests start their
# own server on a free 127.0.0.1 port with their own config and data directory, so only the
# binary is needed: the packaged service must not be started (nor node-exporter pulled in).
set -euo pipefail
PROMETHEUS="${PROMETHEUS:-prometheus}"

if command -v "$PROMETHEUS" >/dev/null 2>&1; then
  echo "Prometheus: $("$PROMETHEUS" --version 2>&1 | head -n 1)"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Prometheus: missing; installing Debian's prometheus package (binary only)"
  # Debian's maintainer scripts start services through invoke-rc.d / deb-systemd-invoke,
  # both of which obey /usr/sbin/policy-rc.d: exit 101 means "do not start". Docker
  # images ship one already; elsewhere one is put in place for the install and removed.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# temporary, scripts/ensure_prometheus.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Without recommends: prometheus-node-exporter would be another service to keep down.
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # A system with a running systemd still enables the unit for the next boot; say so
  # rather than change the machine's configuration behind the developer's back.
  if [ -d /run/systemd/system ] && systemctl is-enabled --quiet prometheus 2>/dev/null; then
    echo "note: the prometheus service is enabled for boot (port 9090);" \
      "'systemctl disable --now prometheus' if you do not want it. The tests do not use it."
  fi
  echo "Prometheus: $("$PROMETHEUS" --version 2>&1 | head -n 1)"
else
  cat >&2 <<MSG
error: the Prometheus pull tests need the prometheus binary on PATH.
  Debian/Ubuntu: sudo apt-get install --no-install-recommends prometheus
  Elsewhere: https://prometheus.io/download/ (any 2.x or 3.x), or set PROMETHEUS to its path.
The tests run their own server on a free 127.0.0.1 port; no service needs to be running.
MSG
  exit 1
fi
