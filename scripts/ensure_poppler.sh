#!/usr/bin/env bash
# The PDF export tests render pages to PNG with poppler's pdftoppm (test-artifacts/pdf/).
set -euo pipefail

if command -v pdftoppm >/dev/null 2>&1; then
  echo "pdftoppm: $(pdftoppm -v 2>&1 | head -n 1)"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "pdftoppm: missing; installing Debian's poppler-utils package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq poppler-utils >/dev/null
  echo "pdftoppm: $(pdftoppm -v 2>&1 | head -n 1)"
else
  cat >&2 <<MSG
error: the PDF export tests need pdftoppm (poppler-utils).
  Debian/Ubuntu: sudo apt-get install poppler-utils
  macOS: brew install poppler
MSG
  exit 1
fi
