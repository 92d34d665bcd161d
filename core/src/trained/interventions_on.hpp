// What ablation, patching and the logit lens do whatever model they run on: the checks of an
// intervention, the sweeps' grids and the lens' ranking, written once over a model's numbers and
// a function that computes one intervened run (gpt_interventions.cpp, hf_interventions.cpp).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/parallel.hpp"
#include "mhaviz/gpt_interventions.hpp"

namespace mhaviz::detail {

// L layers of H query heads, V tokens in the vocabulary.
struct InterventionShape {
  int layers = 0, heads = 0, vocab = 0;
};

inline std::string head_name(const HeadIndex& h) { return std::to_string(h.layer) + "." + std::to_string(h.head); }

inline void check_token(const InterventionShape& s, int id, const char* field) {
  if (id < 0 || id >= s.vocab)
    throw std::invalid_argument(std::string(field) + ": token id " + std::to_string(id) + " is not in [0, " +
                                std::to_string(s.vocab) + ")");
}

inline void check_metric(const InterventionShape& s, const TokenMetric& metric) {
  check_token(s, metric.target, "target");
  if (metric.vs >= 0) check_token(s, metric.vs, "vs");
}

// Throws std::invalid_argument naming the field and the value (gpt_interventions.hpp).
template <class Trace>
void check_intervention_on(const InterventionShape& s, const Trace& base, const InterventionOn<Trace>& iv) {
  auto check_head = [&](const HeadIndex& h, const char* field) {
    if (h.layer < 0 || h.layer >= s.layers || h.head < 0 || h.head >= s.heads)
      throw std::invalid_argument(std::string(field) + ": head " + head_name(h) + " is not in the model's " +
                                  std::to_string(s.layers) + " layers × " + std::to_string(s.heads) + " heads");
  };
  for (const HeadIndex& h : iv.ablate) check_head(h, "ablate");
  for (const HeadIndex& h : iv.patch_heads) check_head(h, "patch");
  for (const ResidIndex& r : iv.patch_resid)
    if (r.layer < 0 || r.layer >= s.layers || r.position < 0 || r.position >= base.tokens())
      throw std::invalid_argument("patch: residual " + std::to_string(r.layer) + "@" + std::to_string(r.position) +
                                  " is not in " + std::to_string(s.layers) + " layers × " +
                                  std::to_string(base.tokens()) + " positions");
  if (iv.patch_heads.empty() && iv.patch_resid.empty()) return;
  if (iv.source == nullptr) throw std::invalid_argument("patch: no run to take the patches from");
  if (iv.source->tokens() != base.tokens() || iv.source->layers.size() != base.layers.size())
    throw std::invalid_argument("patch: the source run has " + std::to_string(iv.source->tokens()) +
                                " tokens, the patched one " + std::to_string(base.tokens()));
}

// Throws std::out_of_range "WHAT: layer L is not in [0, N)" unless 0 <= layer < layers.
inline void check_layer(std::size_t layers, int layer, const char* what) {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers)
    throw std::out_of_range(std::string(what) + ": layer " + std::to_string(layer) + " is not in [0, " +
                            std::to_string(layers) + ")");
}

// One head's context rows (T, hd) in a layer's (1, H, T, hd) tensor.
inline float* head_rows(Tensor& t, int h) { return t.ptr() + static_cast<std::int64_t>(h) * t.shape[2] * t.shape[3]; }
inline const float* head_rows(const Tensor& t, int h) {
  return t.ptr() + static_cast<std::int64_t>(h) * t.shape[2] * t.shape[3];
}

// The edits of one layer on its context (1, H, T, hd): ablations, then patches from the
// source's context of the same layer.
template <class Trace>
void edit_context(const InterventionOn<Trace>& iv, int layer, Tensor& context) {
  const std::int64_t T = context.shape[2], hd = context.shape[3];
  for (const HeadIndex& h : iv.ablate) {
    if (h.layer != layer) continue;
    float* ctx = head_rows(context, h.head);
    if (iv.mode == AblationMode::Zero) {
      std::fill(ctx, ctx + T * hd, 0.0f);
      continue;
    }
    for (std::int64_t d = 0; d < hd; ++d) {
      double sum = 0.0;
      for (std::int64_t i = 0; i < T; ++i) sum += ctx[i * hd + d];
      const auto mean = static_cast<float>(sum / static_cast<double>(T));
      for (std::int64_t i = 0; i < T; ++i) ctx[i * hd + d] = mean;
    }
  }
  for (const HeadIndex& h : iv.patch_heads)
    if (h.layer == layer) {
      const float* src = head_rows(iv.source->layers[static_cast<std::size_t>(layer)].context, h.head);
      std::copy(src, src + T * hd, head_rows(context, h.head));
    }
}

// The residual patches of one layer: rows of the source's residual after the same block.
template <class Trace>
void edit_resid(const InterventionOn<Trace>& iv, int layer, Tensor& resid) {
  const std::int64_t C = resid.shape[2];
  for (const ResidIndex& r : iv.patch_resid)
    if (r.layer == layer) {
      const float* src = iv.source->layers[static_cast<std::size_t>(layer)].resid.ptr() + std::int64_t{r.position} * C;
      std::copy(src, src + C, resid.ptr() + std::int64_t{r.position} * C);
    }
}

// Runs one intervention per grid cell (make(r, c) gives it) from base with run(iv, scratch),
// which leaves the run's last logits in scratch.logits_last; value(those logits) fills the
// cell. nullopt when progress says stop.
template <class Trace, class Make, class Run, class Value>
std::optional<InterventionGrid> sweep(int rows, int cols, const Make& make, const Run& run, const Value& value,
                                      const SweepProgress& progress) {
  InterventionGrid g;
  g.rows = rows;
  g.cols = cols;
  g.values.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  Trace scratch;
  for (int r = 0; r < rows; ++r)
    for (int col = 0; col < cols; ++col) {
      run(make(r, col), scratch);
      g.values[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + col] =
          static_cast<float>(value(scratch.logits_last.data));
      if (progress && !progress(r * cols + col + 1, rows * cols)) return std::nullopt;
    }
  return g;
}

// ablation_sweep (gpt_interventions.hpp) with run(iv, out): the run of clean with iv.
template <class Trace, class Run>
std::optional<InterventionGrid> ablation_sweep_on(const InterventionShape& s, const Trace& clean,
                                                  const TokenMetric& metric, AblationMode mode, const Run& run,
                                                  const SweepProgress& progress) {
  check_metric(s, metric);
  const double base = metric.of(clean.logits_last.data);
  auto make = [mode](int l, int h) {
    InterventionOn<Trace> iv;
    iv.ablate = {{l, h}};
    iv.mode = mode;
    return iv;
  };
  auto value = [&](const std::vector<float>& logits) { return metric.of(logits) - base; };
  auto g = sweep<Trace>(s.layers, s.heads, make, run, value, progress);
  if (g) g->clean = g->corrupt = base;
  return g;
}

// patch_sweep (gpt_interventions.hpp) with run(iv, out): the run of corrupt with iv.
template <class Trace, class Run>
std::optional<InterventionGrid> patch_sweep_on(const InterventionShape& s, const Trace& clean, const Trace& corrupt,
                                               const TokenMetric& metric, PatchPer per, const Run& run,
                                               const SweepProgress& progress) {
  check_metric(s, metric);
  if (clean.tokens() != corrupt.tokens())
    throw std::invalid_argument("corrupt: " + std::to_string(corrupt.tokens()) + " tokens, the clean text has " +
                                std::to_string(clean.tokens()) + " (patching needs equally many)");
  const double good = metric.of(clean.logits_last.data), bad = metric.of(corrupt.logits_last.data);
  if (good == bad)
    throw std::invalid_argument("target: the clean and corrupted texts give the same metric (" + std::to_string(good) +
                                "), so there is nothing to restore");
  auto make = [&](int l, int i) {
    InterventionOn<Trace> iv;
    iv.source = &clean;
    if (per == PatchPer::Head)
      iv.patch_heads = {{l, i}};
    else
      iv.patch_resid = {{l, i}};
    return iv;
  };
  auto value = [&](const std::vector<float>& logits) { return (metric.of(logits) - bad) / (good - bad); };
  const int cols = per == PatchPer::Head ? s.heads : clean.tokens();
  auto g = sweep<Trace>(s.layers, cols, make, run, value, progress);
  if (g) {
    g->clean = good;
    g->corrupt = bad;
  }
  return g;
}

// logit_lens (gpt_interventions.hpp) of a run of T tokens with lens_logits(l, out): block l's
// (T, V) logits into out (one buffer for every layer).
template <class LensLogits>
LogitLens logit_lens_on(const InterventionShape& s, int T, int k, int target, const LensLogits& lens_logits) {
  if (k < 1 || k > s.vocab)
    throw std::invalid_argument("top: " + std::to_string(k) + " is not in [1, " + std::to_string(s.vocab) + "]");
  if (target >= 0) check_token(s, target, "target");
  LogitLens lens;
  lens.layers = s.layers;
  lens.tokens = T;
  lens.k = k;
  lens.target = target;
  const auto V = static_cast<std::size_t>(s.vocab);
  const std::size_t cells = static_cast<std::size_t>(s.layers) * static_cast<std::size_t>(T);
  lens.top.resize(cells * static_cast<std::size_t>(k));
  if (target >= 0) {
    lens.rank.resize(cells);
    lens.target_p.resize(cells);
  }
  std::vector<float> logits;
  for (int l = 0; l < s.layers; ++l) {
    lens_logits(l, logits);
    // Each position's softmax and ranking over threads (rows of a large vocabulary take as long
    // as the LM head's product), each written to its own cell.
    parallel_for(T, static_cast<std::int64_t>(V) * 16, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t pos = p0; pos < p1; ++pos) {
        const std::vector<float> row(
            logits.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(pos) * V),
            logits.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(pos + 1) * V));
        const NextToken next = next_token_from_logits(row, k);
        const std::size_t cell =
            static_cast<std::size_t>(l) * static_cast<std::size_t>(T) + static_cast<std::size_t>(pos);
        std::copy(next.top.begin(), next.top.end(),
                  lens.top.begin() + static_cast<std::ptrdiff_t>(cell * static_cast<std::size_t>(k)));
        if (target < 0) continue;
        // Rank as next_token orders: higher probability first, ties by lower id.
        const float pt = next.probs[static_cast<std::size_t>(target)];
        int rank = 0;
        for (std::size_t i = 0; i < V; ++i)
          rank += next.probs[i] > pt || (next.probs[i] == pt && static_cast<int>(i) < target);
        lens.rank[cell] = rank;
        lens.target_p[cell] = pt;
      }
    });
  }
  return lens;
}

// Norm-weighted attention of one layer: weights (1, H, T, T), v (1, G, T, hd) its values (query
// head h reads K/V head h / (H / G)), wo the output projection [C, H·hd] row-major -> (1, H, T, T)
// weights[h, i, j] · ‖wo[:, h·hd:(h+1)·hd] v[g, j]‖. Each head's (T, C) products in one float
// product (hd terms each), the squares summed in double; heads over threads (Qwen3-0.6B's 16 heads
// × 1024 outputs × 128 deep took seconds per layer one term at a time).
inline Tensor norm_weighted_on(const Tensor& weights, const Tensor& v, const std::vector<float>& wo, int C) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto H = static_cast<int>(weights.shape[1]), T = static_cast<int>(weights.shape[2]);
  const auto G = static_cast<int>(v.shape[1]), hd = static_cast<int>(v.shape[3]);
  const std::int64_t Q = static_cast<std::int64_t>(H) * hd;
  Tensor out = weights;
  parallel_for(H, static_cast<std::int64_t>(T) * C * hd, [&](std::int64_t h0, std::int64_t h1) {
    RowMat f(T, C);
    std::vector<double> norms(static_cast<std::size_t>(T));
    for (std::int64_t h = h0; h < h1; ++h) {
      const Eigen::Map<const RowMat> vg(head_rows(v, static_cast<int>(h / (H / G))), T, hd);
      const Eigen::Map<const RowMat, 0, Eigen::OuterStride<>> wh(wo.data() + h * hd, C, hd, Eigen::OuterStride<>(Q));
      f.noalias() = vg * wh.transpose();
      for (int j = 0; j < T; ++j) {
        double sq = 0.0;
        for (int o = 0; o < C; ++o) sq += static_cast<double>(f(j, o)) * f(j, o);
        norms[static_cast<std::size_t>(j)] = std::sqrt(sq);
      }
      float* a = head_rows(out, static_cast<int>(h));
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) {
          float& x = a[static_cast<std::int64_t>(i) * T + j];
          x = static_cast<float>(x * norms[static_cast<std::size_t>(j)]);
        }
    }
  });
  return out;
}

}  // namespace mhaviz::detail
