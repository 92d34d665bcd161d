#!/usr/bin/env bash
# Side-by-side timing of mhaviz's forward and PyTorch's (Debian's python3-torch), same run.
# Usage: scripts/bench_vs_torch.sh [build dir, default build/bench: release flags, no GUI]
#                                  [--tokens 128 512 1024] [--backends auto avx2 openblas] [--rounds 3]
#                                  [--variants gqa:4 window:256]  (beside weight_split at the last size)
# As a CPU without AVX-512 would run (AVX2 kernels in mhaviz, PyTorch and OpenBLAS alike):
#   ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell scripts/bench_vs_torch.sh build/bench --backends avx2
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/bench}
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  $sudo_cmd apt-get install -y python3-torch libopenblas0-pthread
fi
# Its own build directory: turning the GUI off in build/release would strip the app from `dev.sh run`.
[ -f "$build/CMakeCache.txt" ] || cmake --preset release -B "$build" -DMHAVIZ_GUI=OFF -DMHAVIZ_TESTS=OFF
cmake --build "$build" -j2  # always: a stale binary would measure old code
. scripts/openblas_core.sh
exec /usr/bin/python3 scripts/bench_vs_torch.py "$build/app/mhaviz" "${@:2}"
