#!/usr/bin/env bash
# The Slurm tests run a real one-node Slurm (Debian's slurm-wlm and slurmdbd) against the
# machine's MariaDB. The tests start their own munged, slurmdbd, slurmctld and slurmd on free
# ports with their own configuration and state directory, so only the binaries are needed:
# the packaged services must not be started.
set -euo pipefail

binaries=(slurmctld slurmd slurmdbd sacct sbatch sacctmgr scontrol munged mungekey)
missing=()
for binary in "${binaries[@]}"; do
  # The daemons live in /usr/sbin, which a non-root PATH may leave out. Version checks use
  # the daemons: the clients look for a controller in DNS when no slurm.conf exists.
  if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$binary" >/dev/null 2>&1; then
    missing+=("$binary")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "Slurm: $(PATH="$PATH:/usr/sbin:/sbin" slurmctld -V 2>&1 | head -n 1)"
elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Slurm: missing ${missing[*]}; installing Debian's slurm-wlm and slurmdbd packages"
  # Debian's maintainer scripts start services through invoke-rc.d / deb-systemd-invoke,
  # both of which obey /usr/sbin/policy-rc.d: exit 101 means "do not start". Docker
  # images ship one already; elsewhere one is put in place for the install and removed.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# temporary, scripts/ensure_slurm.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  # A fresh image has no package lists; an existing one may be stale for this version.
  if ! apt-get install -y -qq --no-install-recommends slurm-wlm slurmdbd >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm slurmdbd >/dev/null
  fi
  if [ -d /run/systemd/system ]; then
    for unit in munge slurmctld slurmd slurmdbd; do
      if systemctl is-enabled --quiet "$unit" 2>/dev/null; then
        echo "note: the $unit service is enabled for boot;" \
          "'systemctl disable --now $unit' if you do not want it. The tests do not use it."
      fi
    done
  fi
  echo "Slurm: $(PATH="$PATH:/usr/sbin:/sbin" slurmctld -V 2>&1 | head -n 1)"
else
  cat >&2 <<MSG
error: the Slurm tests need Slurm's daemons and clients (${missing[*]} missing).
  Debian/Ubuntu: sudo apt-get install --no-install-recommends slurm-wlm slurmdbd
They also need a MariaDB or MySQL server on 127.0.0.1:3306 (see docs/development).
The tests run their own cluster on free 127.0.0.1 ports; no service needs to be running.
MSG
  exit 1
fi

# slurmdbd keeps the accounting in MariaDB (or MySQL): the tests need one answering on
# SLURM_TEST_MYSQL_HOST:PORT (127.0.0.1:3306 as root, no password, unless set otherwise).
MYSQL_HOST="${SLURM_TEST_MYSQL_HOST:-127.0.0.1}"
MYSQL_PORT="${SLURM_TEST_MYSQL_PORT:-3306}"
MYSQL_USER="${SLURM_TEST_MYSQL_USER:-root}"
mysql_answers() {
  local client
  client="$(command -v mariadb || command -v mysql)" || return 1
  MYSQL_PWD="${SLURM_TEST_MYSQL_PASSWORD:-}" "$client" -h "$MYSQL_HOST" -P "$MYSQL_PORT" \
    -u "$MYSQL_USER" -e 'SELECT 1' >/dev/null 2>&1
}
if ! mysql_answers && [ "$(id -u)" -eq 0 ] && [ -x /etc/init.d/mariadb ]; then
  echo "MariaDB: not answering on $MYSQL_HOST:$MYSQL_PORT; starting the installed server"
  /etc/init.d/mariadb start >/dev/null
fi
if mysql_answers; then
  echo "MariaDB: answering on $MYSQL_HOST:$MYSQL_PORT"
else
  cat >&2 <<MSG
error: the Slurm tests need MariaDB or MySQL on $MYSQL_HOST:$MYSQL_PORT for slurmdbd
(user $MYSQL_USER; SLURM_TEST_MYSQL_HOST, _PORT, _USER and _PASSWORD say otherwise).
  Debian/Ubuntu: sudo apt-get install mariadb-server
MSG
  exit 1
fi
