#!/usr/bin/env bash
# Runs a command on this machine made slow, as a slower machine of this kind (or one shared
# with other builds) would run it:
#   scripts/slow_machine.sh busy [N] -- COMMAND...  N busy loops (default: one per core) run
#                                                   beside COMMAND, at its priority
#   scripts/slow_machine.sh pin [CPU] -- COMMAND... COMMAND and all it starts on one core
#                                                   (taskset -c CPU, default 0)
# e.g. scripts/slow_machine.sh busy -- ctest --preset asan -L gui
#      scripts/slow_machine.sh pin -- ctest --preset dev -L gui
# Prints the command's wall time, the CPU and the load; exits with the command's status.
set -euo pipefail

usage() {
  echo "usage: scripts/slow_machine.sh busy [N] -- COMMAND... | pin [CPU] -- COMMAND..." >&2
  exit 2
}

mode="${1:-}"
[ "$mode" = busy ] || [ "$mode" = pin ] || usage
shift
arg=""
if [ "${1:-}" != "--" ]; then
  arg="${1:-}"
  shift || usage
fi
[ "${1:-}" = "--" ] || usage
shift
[ $# -gt 0 ] || usage
[[ -z "$arg" || "$arg" =~ ^[0-9]+$ ]] || usage

busy_pids=()
stop_busy() {
  # Only the loops this script started, by their ids.
  for pid in "${busy_pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${busy_pids[@]}"; do wait "$pid" 2> /dev/null || true; done
}
trap stop_busy EXIT

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
flags="$(grep -o -w 'avx2\|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' ')"
case "$mode" in
  busy)
    n="${arg:-$(nproc)}"
    for _ in $(seq "$n"); do
      sh -c 'while :; do :; done' &
      busy_pids+=("$!")
    done
    echo "slow_machine: $n busy loops beside the command ($(nproc) cores: $cpu, ${flags% })"
    run=("$@")
    ;;
  pin)
    core="${arg:-0}"
    echo "slow_machine: the command on core $core only ($(nproc) cores: $cpu, ${flags% })"
    run=(taskset -c "$core" "$@")
    ;;
esac

start=$(date +%s.%N)
status=0
"${run[@]}" || status=$?
end=$(date +%s.%N)
echo "slow_machine: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s, exit status $status," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
