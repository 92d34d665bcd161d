#!/usr/bin/env bash
# The README's pictures of the attention variants (doc/images/variants-*.png), drawn by the
# app's own figure code through `mhaviz render` and `mhaviz kv-memory --plot` from the sessions
# in doc/sessions: a GQA lesson of 6 query heads sharing 2 K/V heads (its heads and its
# repeat_interleave step), a sliding window W = 3 (its mask step), RoPE (its rotation and the
# scores beside the unrotated ones), the KV cache mid-decode, the memory plot, and the
# walkthrough's "Compare variants" figure.
# Usage: scripts/make_variant_images.sh [mhaviz binary, default build/dev/app/mhaviz] [out dir, default doc/images]
set -euo pipefail
cd "$(dirname "$0")/.."
mhaviz=${1:-build/dev/app/mhaviz}
out=${2:-doc/images}
s=doc/sessions
mkdir -p "$out"
render() { "$mhaviz" render "$@" --scale 1 --size 1280x720; }
render "$s/gqa-6-heads-2-kv.json" -o "$out/variants-gqa-heads.png"
render "$s/gqa-6-heads-2-kv.json" -o "$out/variants-gqa-expand.png" --view step expand --pane k
render "$s/swa-window-3.json" -o "$out/variants-swa-mask.png" --view step mask --pane q
render "$s/rope.json" -o "$out/variants-rope-rotation.png" --view step rope --pane all
render "$s/rope.json" -o "$out/variants-rope-scores.png" --view step scores --pane q
render "$s/swa-window-3.json" -o "$out/variants-kv-step.png" --view kv-step 3 --decode-from 2
render "$s/gqa-6-heads-2-kv.json" -o "$out/variants-compare.png" --view variants
"$mhaviz" kv-memory --preset gemma3-270m --plot "$out/variants-kv-memory.png" >/dev/null
