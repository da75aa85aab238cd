#!/usr/bin/env bash
# The FOCUS conformance test runs the FinOps Foundation's focus-validator on an export.
# It needs Python 3.12 or newer, so it lives in a virtual environment of its own, apart
# from the project's, in the user's cache (as pip keeps its wheels there): a new clone finds
# it installed instead of building it again. Installed once per version; a later run only
# checks it answers.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${FOCUS_VALIDATOR_VERSION:-2.2.1}"
VENV="${FOCUS_VALIDATOR_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/focus-validator-$VERSION}"
STAMP="$VENV/.installed-$VERSION"

# The validator writes focus_validator_detailed.log into the directory it runs in: its own.
answers() { (cd "$VENV" && bin/focus-validator --help >/dev/null 2>&1); }

if [ -f "$STAMP" ] && answers; then
  echo "focus-validator: $VERSION in $VENV"
  exit 0
fi

# Two checkouts' `make test` may start at once: one installs, the other waits for it.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [ -f "$STAMP" ] && answers; then
  echo "focus-validator: $VERSION in $VENV"
  exit 0
fi

# The first Python 3.12+ that runs (a pyenv shim of a version not installed fails quietly).
PYTHON=""
for candidate in "${FOCUS_VALIDATOR_PYTHON:-}" "$HOME/.pyenv/versions/3.12.1/bin/python" \
  python3.12 python3.13 python3; do
  [ -n "$candidate" ] || continue
  if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
    PYTHON="$candidate"
    break
  fi
done
if [ -z "$PYTHON" ]; then
  cat >&2 <<MSG
error: focus-validator needs Python 3.12 or newer, and none was found
  (tried \$FOCUS_VALIDATOR_PYTHON, ~/.pyenv/versions/3.12.1, python3.12, python3.13, python3).
  Install one (e.g. 'pyenv install 3.12') or set FOCUS_VALIDATOR_PYTHON to its path.
MSG
  exit 1
fi

echo "focus-validator: installing $VERSION into $VENV with $("$PYTHON" --version)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# focus-validator caps numpy below 2 but not pyarrow, whose releases from 20 on need
# numpy 2: without this cap the validator fails on its first file.
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
printf 'pyarrow<20\n' >"$constraints"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  -c "$constraints" "focus-validator==$VERSION" 2> >(grep -v "^WARNING: Location" >&2)
answers || { echo "error: focus-validator does not run in $VENV" >&2; exit 1; }
touch "$STAMP"
echo "focus-validator: $VERSION in $VENV"
