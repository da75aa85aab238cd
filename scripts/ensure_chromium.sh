#!/usr/bin/env bash
# The browser tests drive Debian's Chromium through Playwright (Playwright's own browser
# download is neither needed nor possible on an air-gapped machine).
set -euo pipefail
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

# Pages in Chinese need a CJK font, or Chromium draws boxes (screenshots, visual checks).
ensure_cjk_font() {
  if command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh 2>/dev/null | head -n 1)" ]; then
    return 0
  fi
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "CJK font: missing; installing Debian's fonts-noto-cjk package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq fonts-noto-cjk >/dev/null
  else
    echo "warning: no CJK font (Debian: apt-get install fonts-noto-cjk); Chinese pages render as boxes" >&2
  fi
}

if [ -x "$CHROMIUM" ]; then
  echo "Chromium: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  ensure_cjk_font
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Chromium: missing; installing Debian's chromium package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  echo "Chromium: $("$CHROMIUM" --version)"
  ensure_cjk_font
else
  cat >&2 <<MSG
error: the browser tests need Chromium at $CHROMIUM.
  Debian/Ubuntu: sudo apt-get install chromium
Or point CHROMIUM at an existing Chromium binary.
MSG
  exit 1
fi
