#!/usr/bin/env bash
# Makes sure the tools the Windows test needs are installed: the MinGW-w64
# C compiler (to cross-build the Windows binary with cgo, for SQLite) and
# Wine (to run it). As root with apt-get it installs the Debian packages;
# otherwise it prints the command that does and fails.
#
#   ./test/windows/install.sh
#
# Silent when everything is there.
set -euo pipefail

packages="gcc-mingw-w64-x86-64 wine wine64"
missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(x86_64-w64-mingw32-gcc)
command -v wine >/dev/null 2>&1 || missing+=(wine)
[ ${#missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "install.sh: installing $packages (missing: ${missing[*]})" >&2
  log=$(mktemp)
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages >"$log" 2>&1; then
    # The package lists may be stale or absent (a fresh container).
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages; } >"$log" 2>&1; then
      echo "install.sh: apt-get could not install $packages:" >&2
      cat "$log" >&2
      rm -f "$log"
      exit 1
    fi
  fi
  rm -f "$log"
  exit 0
fi

echo "install.sh: the Windows test needs ${missing[*]}, which are not installed; on Debian or Ubuntu run:" >&2
echo "  sudo apt-get install -y --no-install-recommends $packages" >&2
exit 1
