#!/usr/bin/env bash
# Installs the example provider's pinned npm packages into
# examples/provider-node/node_modules from the committed package-lock.json
# with `npm ci`.
#
#   NPM_CONFIG_CACHE=DIR ./examples/provider-node/install.sh
#
# `make interop-deps` runs it with npm's cache in .cache/npm. Re-running is
# cheap: nothing is installed while node_modules/.installed-lock.sha256
# matches the lock's sha256. Silent on success; prints npm's log and exits
# non-zero on failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lock="$here/package-lock.json"
stamp="$here/node_modules/.installed-lock.sha256"

for tool in node npm sha256sum; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install.sh: $tool is required but not on PATH" >&2
    exit 1
  fi
done

# Serialise concurrent runs. The lock is held on the directory itself, so
# no lock file is left in the source tree (npm ci deletes node_modules).
if command -v flock >/dev/null 2>&1; then
  exec 9<"$here"
  flock 9
fi

want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# No package here needs an install script.
if ! (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --no-update-notifier --loglevel=error) >"$log" 2>&1; then
  echo "install.sh: npm ci failed in $here:" >&2
  cat "$log" >&2
  exit 1
fi

echo "$want" >"$stamp"
