#!/usr/bin/env bash
# The SSO tests sign in at a real OpenID Connect provider, panva/oidc-provider on Node.js
# (tests/oidc_provider/). This installs its node_modules from the committed lockfile, and
# Debian's nodejs and npm first when they are missing and we are root.
set -euo pipefail
cd "$(dirname "$0")/../tests/oidc_provider"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Node.js: missing; installing Debian's nodejs and npm packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs npm >/dev/null
  else
    cat >&2 <<MSG
note: Node.js 20.19+ and npm are not installed: skipping the test OIDC provider's install.
  The SSO tests (tests/accounts/test_sso.py, tests/browser/test_sso.py) fail until they are.
  Debian/Ubuntu: sudo apt-get install nodejs npm
MSG
    exit 0
  fi
fi
echo "Node.js: $(node --version), npm $(npm --version)"
# npm ci only when the lockfile changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
