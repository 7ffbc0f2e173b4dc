#!/usr/bin/env bash
# Runs several commands at once and fails if any of them fails. Each
# argument is one command for bash -c, run from the current directory
# with its output kept in a file; that output is printed in one piece
# when its command ends (so that concurrent `go test` runs do not
# interleave their lines), led by the command and its exit status.
#
#   scripts/parallel.sh 'go test ./a/...' 'cd sdk && go test ./...'
#
# Interrupting it (Ctrl-C, SIGTERM) stops every command it started.
set -uo pipefail

[ $# -gt 0 ] || { echo "usage: $0 COMMAND..." >&2; exit 2; }

# wait -n -p needs bash 5.1 (macOS ships 3.2): older shells run the
# commands one after another.
if [ "${BASH_VERSINFO[0]}" -lt 5 ] || { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -lt 1 ]; }; then
  failed=0
  for c in "$@"; do
    if bash -c "$c"; then echo "=== ok: $c"; else echo "=== FAILED: $c"; failed=1; fi
  done
  exit "$failed"
fi

dir=$(mktemp -d)
declare -A cmd log
cleanup() {
  for pid in "${!cmd[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Each command runs in its own process group (set -m), so that cleanup
# stops the go tool and the test binaries it started, not just bash.
set -m
n=0
for c in "$@"; do
  n=$((n + 1))
  bash -c "$c" >"$dir/$n.log" 2>&1 &
  cmd[$!]=$c
  log[$!]=$dir/$n.log
done
set +m

failed=0
while [ ${#cmd[@]} -gt 0 ]; do
  # wait -n -p names the command that ended, in the order they end.
  done_pid=
  wait -n -p done_pid "${!cmd[@]}"
  status=$?
  [ -n "$done_pid" ] || { echo "parallel: lost track of the commands" >&2; exit 1; }
  if [ "$status" -eq 0 ]; then
    echo "=== ok: ${cmd[$done_pid]}"
  else
    echo "=== FAILED (exit $status): ${cmd[$done_pid]}"
    failed=1
  fi
  cat "${log[$done_pid]}"
  unset "cmd[$done_pid]" "log[$done_pid]"
done
exit "$failed"
