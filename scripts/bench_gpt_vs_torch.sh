#!/usr/bin/env bash
# mhaviz's trained-GPT forward against PyTorch's on a random GPT-2-small-shaped checkpoint
# (made once with tests/models/make_checkpoints.py into the build dir; never downloaded).
# Usage: scripts/bench_gpt_vs_torch.sh [build dir, default build/bench] [bench_gpt_vs_torch.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/bench}
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  $sudo_cmd apt-get install -y python3-torch libopenblas0-pthread
fi
[ -f "$build/CMakeCache.txt" ] || cmake --preset release -B "$build" -DMHAVIZ_GUI=OFF -DMHAVIZ_TESTS=OFF
cmake --build "$build" -j2
model="$build/gpt2-small-random"
[ -s "$model/model.safetensors" ] || /usr/bin/python3 tests/models/make_checkpoints.py --gpt2-small "$model"
. scripts/openblas_core.sh
exec /usr/bin/python3 scripts/bench_gpt_vs_torch.py "$build/app/mhaviz" "$model" "${@:2}"
