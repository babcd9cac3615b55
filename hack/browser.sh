#!/usr/bin/env bash
# Debian's chromium and chromedriver for the browser tests (tests/ui). Idempotent: a no-op once
# /usr/bin/chromium runs. Installs as root (directly or through sudo); exits non-zero with a message
# when it cannot, and the browser tests then fail saying chromium is missing (never skipped).
set -euo pipefail
if /usr/bin/chromium --version >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "hack/browser.sh: chromium is not installed and this user cannot install it (not root, no sudo):" >&2
  echo "  run 'apt-get install -y chromium chromium-driver' as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${as_root[@]}" apt-get install -y --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null; then
  "${as_root[@]}" apt-get update -qq >/dev/null
  "${as_root[@]}" apt-get install -y --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
fi
/usr/bin/chromium --version
