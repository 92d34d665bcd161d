#!/usr/bin/env bash
# `mhaviz train` against the same training in PyTorch (autograd, torch.optim.AdamW), timed in the
# same run: the induction experiment's defaults, the first 500 steps, on the same batches.
# Usage: scripts/bench_train_vs_torch.sh [build dir, default build/bench] [bench_train_vs_torch.py options]
#   e.g. scripts/bench_train_vs_torch.sh build/bench --rounds 5 --backend avx2
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/bench}
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
if ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  $sudo_cmd apt-get install -y python3-torch python3-numpy libopenblas0-pthread
fi
[ -f "$build/CMakeCache.txt" ] || cmake --preset release -B "$build" -DMHAVIZ_GUI=OFF -DMHAVIZ_TESTS=OFF
cmake --build "$build" -j2 --target mhaviz
. scripts/openblas_core.sh
exec /usr/bin/python3 scripts/bench_train_vs_torch.py "$build/app/mhaviz" "${@:2}"
