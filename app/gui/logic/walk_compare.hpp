// What the "Compare variants" tab shows, computed by a non-UI function (off the UI thread: the
// panel starts it when the trace changes and draws its result when ready).
#pragma once

#include "mhaviz/model.hpp"
#include "mhaviz/tensor.hpp"
#include "mhaviz/trace.hpp"
#include "walkthrough.hpp"

namespace mhaviz::gui {

// A forward's time: the median over `samples` samples, each of `per_sample` forwards run back
// to back so that one sample lasts long enough for the clock (a teaching-size forward takes
// microseconds). ms < 0: not timed.
struct Timing {
  double ms = -1.0;
  int samples = 0, per_sample = 0;
};
// Times forward(m, x) into `out` (out then holds the trace): 7 samples (3 for a forward over
// 5 ms), each a batch of forwards calibrated to last at least 0.25 ms after one warm-up.
Timing time_forward(const Model& m, const Tensor& x, Trace& out);

// The comparison for the session's model (any variant) and input (b, T, d_in): a wrapper with
// the session's num_heads, head_dim and seed (the session's own model when it is a wrapper),
// and the weight-split model made from that wrapper's weights (W stacked row-wise, out_proj =
// identity), both in eval mode; their traces and differences; the cost and median time of
// each variant at this size and as num_heads grows to max_heads (timed while a forward stays
// under `time_flops`); and the attention variants at this size (compare_attention_variants).
// Never throws: Comparison::valid and note say why not.
Comparison compare_variants(const Model& model, const Tensor& input, int max_heads, double time_flops = 4e8);

}  // namespace mhaviz::gui
