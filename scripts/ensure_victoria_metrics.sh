#!/usr/bin/env bash
# The TSDB pull tests and bench/scale_tsdb.py run a real single-node VictoriaMetrics
# (Debian's package). They start their own server on a free 127.0.0.1 port with their own
# -storageDataPath, so only the binary is needed: the packaged service must not be started.
set -euo pipefail
VICTORIA_METRICS="${VICTORIA_METRICS:-victoria-metrics}"

version() {
  "$VICTORIA_METRICS" -version 2>&1 | head -n 1
}

if command -v "$VICTORIA_METRICS" >/dev/null 2>&1; then
  echo "VictoriaMetrics: $(version)"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "VictoriaMetrics: missing; installing Debian's victoria-metrics package (binary only)"
  # Debian's maintainer scripts start services through invoke-rc.d / deb-systemd-invoke,
  # both of which obey /usr/sbin/policy-rc.d: exit 101 means "do not start". Docker
  # images ship one already; elsewhere one is put in place for the install and removed.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# temporary, scripts/ensure_victoria_metrics.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends victoria-metrics >/dev/null
  if [ -d /run/systemd/system ] && systemctl is-enabled --quiet victoria-metrics 2>/dev/null; then
    echo "note: the victoria-metrics service is enabled for boot (port 8428);" \
      "'systemctl disable --now victoria-metrics' if you do not want it. The tests do not use it."
  fi
  echo "VictoriaMetrics: $(version)"
else
  cat >&2 <<MSG
error: the TSDB pull tests need the victoria-metrics binary on PATH.
  Debian/Ubuntu: sudo apt-get install --no-install-recommends victoria-metrics
  Elsewhere: the single-node release of VictoriaMetrics (1.79 or newer), or set
  VICTORIA_METRICS to its path.
The tests run their own server on a free 127.0.0.1 port; no service needs to be running.
MSG
  exit 1
fi
