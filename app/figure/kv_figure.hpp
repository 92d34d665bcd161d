// The KV cache stepper's figure (the app's KV cache view, `mhaviz render --view kv-step`):
// after one step of a decode through the cache (kv_cache.hpp; step 0 is the prefill), what
// the cache holds and what the newest query reads of it. Per K/V head, its keys and values
// transposed, one column per position (mla: the latent alone, for every head), so the cache
// grows by one column a step; under them the newest query's attention weights of each query
// head reading that K/V head, in the same columns; the rows a sliding window evicts at this
// step hatched as leaving. The header says the cache's size in elements and bytes.
#pragma once

#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "mhaviz/kv_cache.hpp"

namespace mhaviz::figure {

// The figure within o.canvas for step `step` of d (0 .. d.steps.size() - 1) and batch item
// o.batch. Hits "kv_block_G" for K/V head G's block (mla: one, 0). Heatmaps: per block its
// cached tensors (k, v; or the latent), then its query heads' weights. Uses o.canvas, o.type,
// o.dark, o.transparent, o.caption, o.colormap, o.values. Throws std::invalid_argument
// ("--step: …", "--batch: …") for a step or batch out of range.
Figure build_kv_step_figure(const DecodeTrace& d, const std::vector<std::string>& tokens, int step, const Options& o);

}  // namespace mhaviz::figure
