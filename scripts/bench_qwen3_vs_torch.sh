#!/usr/bin/env bash
# mhaviz's Qwen3 forward against the book's Qwen3Model in PyTorch (torch.no_grad(), float32,
# best of 1 and 2 threads) on a random Qwen3-0.6B-shaped F32 checkpoint, made once with
# tests/models/make_modern_checkpoints.py into the build dir (never downloaded). The two are
# run in turn, `rounds` times, so a machine shared with other work loads both alike; each
# round prints both medians and their ratio (mhaviz / torch; the goal is at most 0.75).
# Usage: scripts/bench_qwen3_vs_torch.sh [build dir, default build/bench] [rounds, default 3] [T, default 256]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/bench}
rounds=${2:-3}
tokens=${3:-256}
[ -f "$build/CMakeCache.txt" ] || cmake --preset release -B "$build" -DMHAVIZ_GUI=OFF -DMHAVIZ_TESTS=OFF
cmake --build "$build" --target mhaviz -j2
model="$build/qwen3-0.6b"
[ -s "$model/model.safetensors" ] || /usr/bin/python3 tests/models/make_modern_checkpoints.py --qwen3-0.6b "$model"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(grep -o -w 'avx2\|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' '))"
for r in $(seq "$rounds"); do
  ours=$("$build/app/mhaviz" bench --model "$model" --tokens "$tokens" --repeat 3 --warmup 1)
  theirs=$(/usr/bin/python3 tests/models/bench_qwen3_torch.py "$model" --tokens "$tokens" --repeat 3)
  m=$(sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' <<<"$ours")
  rss=$(sed -n 's/.*peak_rss_mib=\([0-9.]*\).*/\1/p' <<<"$ours")
  t=$(sed -n 's/.*T = [0-9]*: \([0-9.]*\) ms.*/\1/p' <<<"$theirs")
  trss=$(sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p' <<<"$theirs")
  echo "round $r: mhaviz $m ms (peak RSS $rss MiB), torch $t ms (peak RSS $trss MiB), ratio $(/usr/bin/python3 -c "print(f'{$m / $t:.2f}')")"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
