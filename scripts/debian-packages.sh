#!/usr/bin/env bash
# Makes sure the Debian packages named as arguments are installed: as root
# it installs the missing ones with apt-get; otherwise it prints the
# command to run and fails. On a system without dpkg it only says what is
# needed, since the commands that use the packages report what is missing.
set -euo pipefail

[ $# -gt 0 ] || { echo "usage: $0 PACKAGE..." >&2; exit 2; }

if ! command -v dpkg-query >/dev/null; then
  echo "not a Debian system: make sure the equivalents of these are installed: $*" >&2
  exit 0
fi

missing=()
for pkg in "$@"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "missing Debian packages: ${missing[*]}; install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
  # A machine that never fetched the package lists needs them first.
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
