#!/bin/sh
# Runs COMMAND under an X server of its own (Xvfb, 1280 × 800, 24 bits) and stops the server
# after it; exits with COMMAND's status. The server picks its display itself (-displayfd: the
# first number whose lock it can create, which it does atomically), so no two servers ever
# share one: not two tests starting at once, and not the tests of two ctest runs on one
# machine (two presets, two checkouts), which xvfb-run's search from a given number let race
# (a test's app once found its display gone mid-test).
# Usage: tests/gui/xvfb.sh COMMAND [ARGS...]
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/mhaviz-xvfb-XXXXXX") || exit 1
pid=""
stop() {
  [ -n "$pid" ] && kill "$pid" 2> /dev/null && wait "$pid" 2> /dev/null
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM
mkfifo "$dir/display" || exit 1
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3> "$dir/display" 2> "$dir/log" &
pid=$!
if ! read -r n < "$dir/display"; then
  echo "xvfb.sh: Xvfb did not start:" >&2
  cat "$dir/log" >&2
  exit 1
fi
status=0
DISPLAY=":$n" "$@" || status=$?
exit "$status"
