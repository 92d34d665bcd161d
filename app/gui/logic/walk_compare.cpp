#include "walk_compare.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

namespace mhaviz::gui {

Timing time_forward(const Model& m, const Tensor& x, Trace& out) {
  using clock = std::chrono::steady_clock;
  const auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  // Warm up once (caches, the worker pool), then double the batch until one batch lasts 0.25 ms:
  // sizing it from the cold first forward alone gave batches of one whenever that forward was
  // slow (a sanitizer build, a busy machine), and a single teaching-size forward is below what
  // the clock can measure.
  forward(m, x, out);
  Timing t;
  t.per_sample = 1;
  double once = 0;
  for (;;) {
    auto t0 = clock::now();
    for (int r = 0; r < t.per_sample; ++r) forward(m, x, out);
    double batch = ms_since(t0);
    // One forward is judged by the fastest of three while it is cheap: a single slow one (a
    // page fault, a preemption, the second forward of a sanitizer build) gave batches of one
    // for a forward of 0.08 ms.
    for (int again = 0; t.per_sample == 1 && batch < 5.0 && again < 2; ++again) {
      t0 = clock::now();
      forward(m, x, out);
      batch = std::min(batch, ms_since(t0));
    }
    once = batch / t.per_sample;
    if (batch >= 0.25 || t.per_sample >= 100000) break;
    t.per_sample = std::min(100000, t.per_sample * 2);
  }
  t.samples = once > 5.0 ? 3 : 7;
  std::vector<double> per;
  for (int s = 0; s < t.samples; ++s) {
    const auto t0 = clock::now();
    for (int r = 0; r < t.per_sample; ++r) forward(m, x, out);
    per.push_back(ms_since(t0) / t.per_sample);
  }
  std::nth_element(per.begin(), per.begin() + static_cast<std::ptrdiff_t>(per.size() / 2), per.end());
  t.ms = per[per.size() / 2];
  return t;
}

Comparison compare_variants(const Model& model, const Tensor& input, int max_heads, double time_flops) {
  Comparison c;
  try {
    const ModelConfig& cur = model.config;
    const int heads = cur.num_heads;
    const int head_dim = cur.variant == Variant::Wrapper ? cur.d_out : cur.d_out / std::max(1, heads);
    c.batch = static_cast<int>(input.shape.at(0));
    c.tokens = static_cast<int>(input.shape.at(1));
    c.d_in = static_cast<int>(input.shape.at(2));
    c.heads = heads;
    c.head_dim = head_dim;
    const std::string what =
        "Compared: a MultiHeadAttentionWrapper and a weight-split MultiHeadAttention whose W_query, W_key and "
        "W_value are the wrapper's heads stacked row-wise and whose out_proj is the identity, both in eval "
        "mode (no dropout), so they compute the same function. ";
    Model wrapper;
    if (cur.variant == Variant::Wrapper) {
      wrapper = model;
      c.note = what + "The wrapper is this session's model.";
    } else {
      ModelConfig wc = cur;
      wc.variant = Variant::Wrapper;
      wc.d_out = head_dim;
      wc.out_dim = 0;  // a trained layer's out_proj width: the wrapper has no out_proj
      wc.weights = nullptr;
      wrapper = build_model(wc, c.d_in);
      c.note = what + "This session is " + std::string(variant_name(cur.variant)) +
               ": the wrapper here is a new one (" + std::to_string(heads) +
               " heads of d_out = " + std::to_string(head_dim) + ", seed " + std::to_string(cur.seed) +
               "), so its weights and results differ from the walkthrough's.";
    }
    wrapper.config.training = false;
    Model split = weight_split_from_wrapper(wrapper);
    split.config.training = false;
    Comparison::Row first;
    first.heads = heads;
    const Timing tw = time_forward(wrapper, input, c.wrapper);
    const Timing ts = time_forward(split, input, c.split);
    first.wrapper_ms = tw.ms;
    first.split_ms = ts.ms;
    first.samples = tw.samples;
    first.per_sample = tw.per_sample;
    for (std::size_t i = 0; i < c.wrapper.weights.data.size() && i < c.split.weights.data.size(); ++i)
      c.max_diff_weights = std::max(
          c.max_diff_weights, static_cast<double>(std::fabs(c.wrapper.weights.data[i] - c.split.weights.data[i])));
    for (std::size_t i = 0; i < c.wrapper.output.data.size() && i < c.split.output.data.size(); ++i)
      c.max_diff_output = std::max(c.max_diff_output,
                                   static_cast<double>(std::fabs(c.wrapper.output.data[i] - c.split.output.data[i])));
    // Cost (and time, while cheap) at h heads of the same head_dim, for each variant.
    const auto configs = [&](int h) {
      ModelConfig wc = wrapper.config;
      wc.num_heads = h;
      wc.d_out = head_dim;
      ModelConfig sc = wc;
      sc.variant = Variant::WeightSplit;
      sc.d_out = h * head_dim;
      ModelConfig fc = sc;
      fc.variant = Variant::FusedQkv;
      return std::array<ModelConfig, 3>{wc, sc, fc};
    };
    const auto cost_row = [&](int h) {
      Comparison::Row r;
      r.heads = h;
      const auto cf = configs(h);
      r.wrapper = forward_cost(cf[0], c.d_in, c.tokens, c.batch);
      r.split = forward_cost(cf[1], c.d_in, c.tokens, c.batch);
      r.fused = forward_cost(cf[2], c.d_in, c.tokens, c.batch);
      r.wrapper_ms = r.split_ms = r.fused_ms = -1.0;
      if (static_cast<double>(r.wrapper.flops) < time_flops) {
        Trace scratch;
        const Timing a = time_forward(build_model(cf[0], c.d_in), input, scratch);
        r.wrapper_ms = a.ms;
        r.samples = a.samples;
        r.per_sample = a.per_sample;
        r.split_ms = time_forward(build_model(cf[1], c.d_in), input, scratch).ms;
        r.fused_ms = time_forward(build_model(cf[2], c.d_in), input, scratch).ms;
      }
      return r;
    };
    const Comparison::Row here = cost_row(heads);
    first.wrapper = here.wrapper;
    first.split = here.split;
    first.fused = here.fused;
    first.fused_ms = here.fused_ms >= 0 ? here.fused_ms : -1.0;
    if (first.fused_ms < 0) {
      Trace scratch;
      first.fused_ms = time_forward(build_model(configs(heads)[2], c.d_in), input, scratch).ms;
    }
    c.rows.push_back(first);
    for (int h : {1, 2, 4, 8, 12, 16, 24, 32, 48, 64}) {
      if (h > max_heads) break;
      c.rows.push_back(cost_row(h));
    }
    c.variants = compare_attention_variants(model, input);
    c.valid = true;
  } catch (const std::exception& e) {
    c.valid = false;
    c.note = std::string("Cannot build the comparison: ") + e.what();
  }
  return c;
}

}  // namespace mhaviz::gui
