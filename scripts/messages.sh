#!/usr/bin/env bash
# Extract the interface's strings into the zh-Hans catalogue and compile it; run after
# adding or changing a translatable string, then translate what `po_fill.py` reports.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" manage.py makemessages -l zh_Hans --no-location --no-obsolete \
  --ignore=.venv --ignore=node_modules --ignore=var --ignore=test-artifacts \
  --ignore=bench --ignore=tests --ignore=scripts --ignore=locale
"$PYTHON" scripts/po_fill.py "$@"
"$PYTHON" manage.py compilemessages -l zh_Hans --ignore=.venv
