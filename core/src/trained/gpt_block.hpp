// One GPT block over a range of rows, the final norm and the LM head over rows: the pieces of
// gpt_forward (gpt_forward.cpp) that the interventions (gpt_interventions.cpp) run again on an
// edited layer, so an intervened run is the same code as the clean one.
#pragma once

#include <cstdint>
#include <functional>

#include "mhaviz/gpt_forward.hpp"

namespace mhaviz::detail {

// Called with the layer's trace once its context (1, H, T, hd) holds rows [start, T), before
// the merge and the output projection read it: an intervention rewrites context rows there.
using ContextEdit = std::function<void(GptLayerTrace& layer)>;

// One block over rows [start, T) of the layer trace L (shaped for T): in (T, C) is the block's
// input residual; tr lends its scratch. edit (may be null) runs before the output projection.
void gpt_block_rows(const GptModel& m, const GptBlock& blk, const float* in, GptLayerTrace& L, GptTrace& tr, int start,
                    int T, bool kernel, const ContextEdit* edit);

// in, out: (rows, C). The final LayerNorm (attention-only models: a copy, they have none).
void gpt_final_norm_rows(const GptModel& m, const float* in, float* out, int rows);

// x: (rows, C) final-norm rows -> logits (rows, V), each row the same bits as gpt_logits gives
// for that row on backend be (OpenBLAS: one row at a time, as gpt_logits does).
void gpt_head_rows(const GptModel& m, const float* x, int rows, float* logits, Backend be);

}  // namespace mhaviz::detail
