#!/usr/bin/env bash
# The browser tests drive Debian's Chromium through Playwright (Playwright's own browser
# download is neither needed nor possible on an air-gapped machine).
set -euo pipefail
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

if [ -x "$CHROMIUM" ]; then
  echo "Chromium: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Chromium: missing; installing Debian's chromium package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  echo "Chromium: $("$CHROMIUM" --version)"
else
  cat >&2 <<MSG
error: the browser tests need Chromium at $CHROMIUM.
  Debian/Ubuntu: sudo apt-get install chromium
Or point CHROMIUM at an existing Chromium binary.
MSG
  exit 1
fi
