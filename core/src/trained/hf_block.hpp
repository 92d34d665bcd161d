// The pieces of hf_forward (hf_forward.cpp) that the interventions (hf_interventions.cpp) run
// again from an edited layer on, so that an intervened run is the clean forward's own code.
#pragma once

#include <functional>
#include <span>

#include "mhaviz/hf_model.hpp"

namespace mhaviz::detail {

// Rewrites of one layer while it is computed: `context` once the layer's context (1, H, T, hd)
// holds rows [start, T), before the merge and o_proj read it; `resid` once its residual after
// the block (1, T, C) holds them, before the next layer reads it. Either may be empty.
struct HfEdits {
  std::function<void(int layer, HfLayerTrace&)> context, resid;
};

// tr's tensors shaped for ids (T of them) keeping rows < start (hf_forward's resizing); tr
// names no model until hf_finish.
void hf_shape_trace(const HfModel& m, std::span<const int> ids, int start, HfTrace& tr);

// Layers [from, L) over rows [start, T) of tr (shaped by hf_shape_trace): layer `from` reads
// layer from − 1's residual rows, or the embeddings of ids when from is 0; then the final norm.
// edits may be null.
void hf_layer_rows(const HfModel& m, std::span<const int> ids, int from, int start, HfTrace& tr, bool kernel,
                   const HfEdits* edits);

// x: (rows, C) final-norm rows -> logits (rows, V), each row the same bits as hf_logits gives
// for that row (on OpenBLAS one row at a time, as hf_logits computes it).
void hf_head_rows(const HfModel& m, const float* x, int rows, float* logits, bool kernel);

}  // namespace mhaviz::detail
