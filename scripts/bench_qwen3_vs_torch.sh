#!/usr/bin/env bash
# mhaviz's Qwen3 forward against the book's Qwen3Model in PyTorch (torch.no_grad(), float32,
# best of 1 and 2 threads) on a random Qwen3-0.6B-shaped checkpoint, F32 or BF16, made once with
# tests/models/make_modern_checkpoints.py into the build dir (never downloaded). The two are
# run in turn, `rounds` times, so a machine shared with other work loads both alike; each
# round prints both medians and their ratio (mhaviz / torch; the goal is at most 0.75), the
# SGEMM peak torch.mm reaches (scripts/bench_floor.py, in a process of its own), the forward's
# floor (its products' FLOPs, listed in round 1, at the best peak of the rounds so far, as
# bench_vs_torch.py takes it: a busy machine slows a short probe as much as a forward) and
# mhaviz's time over it (the goal: at most 1.25), and mhaviz's recompute after an edit at the
# last position
# (`bench --edit-at T-1`), over the time to read every weight once where mhaviz reports it
# (read_once_ms; the goal: at most 1.3).
# Usage: scripts/bench_qwen3_vs_torch.sh [options] [build dir, default build/bench] [rounds, default 3] [T, default 256]
#   --backend B   mhaviz's products in B: auto (default), avx512, avx2 or openblas; for torch held
#                 to AVX2 too, prefix ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell
#   --bf16        a BF16 checkpoint (the F32 one's values rounded), in BUILD/qwen3-0.6b-bf16
#   --model DIR   the checkpoint's folder (default BUILD/qwen3-0.6b[-bf16]; made there if missing)
#   --mhaviz BIN  time this binary and build nothing (default: build BUILD's mhaviz and time it)
set -euo pipefail
cd "$(dirname "$0")/.."
backend=auto bf16="" model="" binary="" positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --bf16) bf16=1; shift ;;
    --model) model=$2; shift 2 ;;
    --mhaviz) binary=$2; shift 2 ;;
    -*) echo "bench_qwen3_vs_torch.sh: unknown option $1" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
build=${positional[0]:-build/bench}
rounds=${positional[1]:-3}
tokens=${positional[2]:-256}
if [ -z "$binary" ]; then
  [ -f "$build/CMakeCache.txt" ] || cmake --preset release -B "$build" -DMHAVIZ_GUI=OFF -DMHAVIZ_TESTS=OFF
  cmake --build "$build" --target mhaviz -j2
  binary="$build/app/mhaviz"
fi
model=${model:-$build/qwen3-0.6b${bf16:+-bf16}}
[ -s "$model/model.safetensors" ] ||
  /usr/bin/python3 tests/models/make_modern_checkpoints.py --qwen3-0.6b "$model" ${bf16:+--bf16}
. scripts/openblas_core.sh
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(grep -o -w 'avx2\|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' '))"
echo "checkpoint $model ($(du -m "$model/model.safetensors" | cut -f1) MiB), T = $tokens, mhaviz --backend $backend," \
  "ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-default} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto}"
key() { sed -n "s/.*\b$1=\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ms() { awk -v a="$1" 'BEGIN { printf "%.1f", a }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
all_m=() all_t=() all_e=() all_eo=() best=0
edit_refused="" errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
for r in $(seq "$rounds"); do
  ours=$("$binary" bench --model "$model" --tokens "$tokens" --repeat 3 --warmup 1 --backend "$backend")
  theirs=$(/usr/bin/python3 tests/models/bench_qwen3_torch.py "$model" --tokens "$tokens" --repeat 3)
  floor=$(/usr/bin/python3 scripts/bench_floor.py "$model" --tokens "$tokens" $([ "$r" -gt 1 ] && echo --quiet))
  m=$(ms "$(key median_ms "$ours")")
  rss=$(key peak_rss_mib "$ours")
  t=$(sed -n 's/.*T = [0-9]*: \([0-9.]*\) ms.*/\1/p' <<<"$theirs")
  trss=$(sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p' <<<"$theirs")
  sgemm=$(key sgemm_gflops "$floor") gflop=$(key gflop "$floor")
  best=$(awk -v a="$best" -v b="$sgemm" 'BEGIN { print (a > b ? a : b) }')
  f=$(awk -v g="$gflop" -v s="$best" 'BEGIN { printf "%.1f", g / s * 1000 }')
  all_m+=("$m") all_t+=("$t")
  if [ "$r" -eq 1 ]; then
    grep -v '^gflop=' <<<"$floor"
    echo "mhaviz counts $(sed -n 's/^\([0-9.]*\) GFLOP per run.*/\1/p' <<<"$ours") GFLOP a run"
  fi
  edit="edit at T-1 refused, as in round 1"
  if [ -z "$edit_refused" ]; then
    if ours_edit=$("$binary" bench --model "$model" --tokens "$tokens" --repeat 5 --warmup 1 --backend "$backend" \
      --edit-at $((tokens - 1)) 2>"$errors"); then
      e=$(ms "$(key median_ms "$ours_edit")")
      once=$(key read_once_ms "$ours_edit")
      edit="edit at T-1 $e ms"
      all_e+=("$e")
      if [ -n "$once" ]; then
        once=$(ms "$once")
        all_eo+=("$(div "$e" "$once")")
        edit+=", read once $once ms, edit / read-once $(div "$e" "$once")"
      else edit+=" (this mhaviz reports no read_once_ms)"; fi
    else
      edit_refused=1
      edit="edit at T-1 refused by this mhaviz: $(head -1 "$errors")"
    fi
  fi
  echo "round $r: mhaviz $m ms (peak RSS $rss MiB), torch $t ms (peak RSS $trss MiB), ratio $(div "$m" "$t");" \
    "SGEMM $sgemm GFLOP/s (best $best), floor $f ms, mhaviz / floor $(div "$m" "$f"); $edit"
done
# Edit over read-once: each round's own (both timed by one mhaviz process), then their median.
summary="medians of $rounds rounds: mhaviz $(median "${all_m[@]}") ms, torch $(median "${all_t[@]}") ms, ratio"
summary+=" $(div "$(median "${all_m[@]}")" "$(median "${all_t[@]}")"), floor $f ms (at $best GFLOP/s),"
summary+=" mhaviz / floor $(div "$(median "${all_m[@]}")" "$f")"
[ ${#all_e[@]} -eq 0 ] || summary+=", edit at T-1 $(median "${all_e[@]}") ms"
[ ${#all_eo[@]} -eq 0 ] || summary+=", edit / read-once $(median "${all_eo[@]}")"
echo "$summary"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
