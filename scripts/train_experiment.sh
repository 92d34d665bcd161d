#!/usr/bin/env bash
# The induction-head experiment: `mhaviz train` with its defaults (2 layers x 4 heads,
# attention-only, d 64, vocab 64, 64 sequences of 32 tokens, AdamW lr 1e-2, weight decay 0.1)
# from three seeds, and the 1-layer control from the same seeds; then a summary of when each run
# reached the criteria (scripts/train_experiment.py).
# Usage: scripts/train_experiment.sh [build dir, default build/bench] [out dir, default build/experiment] [seeds...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/bench}
out=${2:-build/experiment}
seeds=("${@:3}")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
[ -f "$build/CMakeCache.txt" ] || cmake --preset release -B "$build" -DMHAVIZ_GUI=OFF -DMHAVIZ_TESTS=OFF
cmake --build "$build" -j2 --target mhaviz
mkdir -p "$out"
for seed in "${seeds[@]}"; do
  for layers in 2 1; do
    run="L$layers-seed$seed"
    mkdir -p "$out/$run"
    echo "== $run" >&2
    "$build/app/mhaviz" train --seed "$seed" --layers "$layers" --log "$out/$run.jsonl" -o "$out/$run/model.safetensors"
  done
done
exec python3 scripts/train_experiment.py "$out"
