#!/usr/bin/env bash
# The Debian packages the suite's peers come from (Chromium and a CJK font, poppler,
# Prometheus, VictoriaMetrics, Slurm, gettext, Node.js), installed together when missing:
# one update of the package lists and one install, where each peer's own script
# (ensure_chromium.sh, ensure_prometheus.sh, …) would update the lists again. Those scripts
# then find their package and only check it; without root or apt-get this does nothing
# and they say what to install.
set -euo pipefail

have() { PATH="$PATH:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1; }

# Installed with Debian's recommends, as their own scripts install them.
with_recommends=()
# Services whose recommends would be more services to keep down (node-exporter, …).
without_recommends=()

[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || with_recommends+=(chromium)
if ! have fc-list || [ -z "$(fc-list :lang=zh 2>/dev/null | head -n 1)" ]; then
  with_recommends+=(fonts-noto-cjk)
fi
have pdftoppm || with_recommends+=(poppler-utils)
{ have xgettext && have msgfmt; } || with_recommends+=(gettext)
{ have node && have npm; } || with_recommends+=(nodejs npm)
have "${PROMETHEUS:-prometheus}" || without_recommends+=(prometheus)
have "${VICTORIA_METRICS:-victoria-metrics}" || without_recommends+=(victoria-metrics)
for binary in slurmctld slurmd slurmdbd sacct sbatch sacctmgr scontrol munged mungekey; do
  if ! have "$binary"; then
    without_recommends+=(slurm-wlm slurmdbd)
    break
  fi
done

if [ ${#with_recommends[@]} -eq 0 ] && [ ${#without_recommends[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  exit 0
fi

echo "Debian packages: installing ${with_recommends[*]} ${without_recommends[*]}"
# Debian's maintainer scripts start services through invoke-rc.d / deb-systemd-invoke,
# both of which obey /usr/sbin/policy-rc.d: exit 101 means "do not start". The tests run
# their own servers on free ports; the packaged services must stay down.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# temporary, scripts/ensure_debian_packages.sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#with_recommends[@]} -gt 0 ]; then
  apt-get install -y -qq "${with_recommends[@]}" >/dev/null
fi
if [ ${#without_recommends[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${without_recommends[@]}" >/dev/null
fi
