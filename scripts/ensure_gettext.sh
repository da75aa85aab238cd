#!/usr/bin/env bash
# The catalogue tests extract the interface's strings with GNU gettext's xgettext, as
# `manage.py makemessages` does, to check that every one is translated.
set -euo pipefail

if command -v xgettext >/dev/null 2>&1 && command -v msgfmt >/dev/null 2>&1; then
  echo "gettext: $(xgettext --version | head -n 1)"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "gettext: missing; installing Debian's gettext package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq gettext >/dev/null
  echo "gettext: $(xgettext --version | head -n 1)"
else
  cat >&2 <<MSG
error: the translation tests need GNU gettext (xgettext, msgfmt).
  Debian/Ubuntu: sudo apt-get install gettext
  macOS: brew install gettext
MSG
  exit 1
fi
