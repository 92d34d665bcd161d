// The oracle: forward() written as plain loops over PyTorch's index formulas, with
// double accumulation. Slow on purpose; tests compare the fast path against it.
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/attention_reference.hpp"
#include "lesson/forward_steps.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {
namespace {

// y[n, o] = sum_i x[n, i] * W[o, i] + bias[o]; x (N, in) -> y (N, out)
std::vector<float> linear_loops(const Linear& l, const std::vector<float>& x, std::int64_t n) {
  std::vector<float> y(static_cast<std::size_t>(n * l.out));
  for (std::int64_t r = 0; r < n; ++r)
    for (int o = 0; o < l.out; ++o) {
      double acc = l.bias.empty() ? 0.0 : l.bias[static_cast<std::size_t>(o)];
      for (int i = 0; i < l.in; ++i)
        acc += static_cast<double>(x[static_cast<std::size_t>(r * l.in + i)]) *
               l.weight[static_cast<std::size_t>(o) * static_cast<std::size_t>(l.in) + static_cast<std::size_t>(i)];
      y[static_cast<std::size_t>(r * l.out + o)] = static_cast<float>(acc);
    }
  return y;
}

// Pair p's (rows, cols) matrix of a (b, h, rows, cols) tensor, in double.
std::vector<double> pair_rows(const Tensor& t, std::size_t p, int rows, int cols) {
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  return std::vector<double>(t.data.begin() + static_cast<std::ptrdiff_t>(p * n),
                             t.data.begin() + static_cast<std::ptrdiff_t>((p + 1) * n));
}

// RMSNorm over the last dimension d of t, each row by itself: x / sqrt(mean(x²) + eps) · scale.
Tensor rms_norm_loops(const Tensor& t, const std::vector<float>& scale, double eps) {
  Tensor out(t.shape);
  const std::size_t d = scale.size();
  for (std::size_t row = 0; row < t.data.size() / d; ++row) {
    double ms = 0.0;
    for (std::size_t i = 0; i < d; ++i) ms += static_cast<double>(t.data[row * d + i]) * t.data[row * d + i];
    const double inv = 1.0 / std::sqrt(ms / static_cast<double>(d) + eps);
    for (std::size_t i = 0; i < d; ++i)
      out.data[row * d + i] = static_cast<float>(t.data[row * d + i] * inv) * scale[i];
  }
  return out;
}

// RoPE of t (b, heads, T, hd), position = t's index: x·cos + cat(−x2, x1)·sin, the angle of
// value i (and i + hd/2) at position p being p / base^(2i / hd), or p · inv_freq[i] when a
// model's scaling gave the frequencies.
Tensor rope_loops(const Tensor& t, double base, const std::vector<double>& inv_freq) {
  Tensor out(t.shape);
  const std::int64_t B = t.shape[0], heads = t.shape[1], T = t.shape[2], hd = t.shape[3], half = hd / 2;
  for (std::int64_t bi = 0; bi < B; ++bi)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t p = 0; p < T; ++p)
        for (std::int64_t i = 0; i < hd; ++i) {
          const std::int64_t f = i % half;
          const double angle =
              inv_freq.empty()
                  ? static_cast<double>(p) / std::pow(base, static_cast<double>(2 * f) / static_cast<double>(hd))
                  : static_cast<double>(p) * inv_freq[static_cast<std::size_t>(f)];
          const double x = t.at({bi, h, p, i});
          const double rotated =
              i < half ? -static_cast<double>(t.at({bi, h, p, i + half})) : t.at({bi, h, p, i - half});
          out.at({bi, h, p, i}) = static_cast<float>(x * std::cos(angle) + rotated * std::sin(angle));
        }
  return out;
}

// QK-norm, then RoPE, on tr.q (b, H, T, hd) and tr.k (b, G, T, hd), kept in the trace; returns
// the q and k attention reads (the last of q -> q_normed -> q_rotated, k likewise).
std::pair<const Tensor*, const Tensor*> norm_and_rotate_loops(const Model& model, Trace& tr) {
  const ModelConfig& c = model.config;
  const Tensor* q = &tr.q;
  const Tensor* k = &tr.k;
  if (c.qk_norm) {
    tr.q_normed = rms_norm_loops(tr.q, model.q_norm, c.qk_norm_eps);
    tr.k_normed = rms_norm_loops(tr.k, model.k_norm, c.qk_norm_eps);
    q = &tr.q_normed;
    k = &tr.k_normed;
  }
  if (c.rope_base != 0.0) {
    tr.q_rotated = rope_loops(*q, c.rope_base, c.rope_inv_freq);
    tr.k_rotated = rope_loops(*k, c.rope_base, c.rope_inv_freq);
    q = &tr.q_rotated;
    k = &tr.k_rotated;
  }
  return {q, k};
}

}  // namespace

Trace forward_reference(const Model& model, const Tensor& input) {
  const ModelConfig& c = model.config;
  const int b = static_cast<int>(input.shape[0]), T = static_cast<int>(input.shape[1]);
  const int H = c.num_heads, hd = head_dim(c), M = merged_dim(c), D = c.d_out;
  const std::int64_t N = static_cast<std::int64_t>(b) * T;
  Trace tr;
  tr.config = c;
  tr.batch = b;
  tr.tokens = T;
  tr.d_in = model.d_in;
  tr.heads = H;
  tr.head_dim = hd;
  tr.input = input;
  tr.cost = forward_cost(c, model.d_in, T, b);
  const int G = kv_heads(c), KV = G * hd;
  tr.kv_heads = G;
  tr.q = Tensor({b, H, T, hd});
  tr.k = tr.v = Tensor({b, G, T, hd});
  tr.queries = Tensor({b, T, M});
  tr.keys = tr.values = Tensor({b, T, KV});
  Tensor* per_head[3] = {&tr.q, &tr.k, &tr.v};
  Tensor* merged[3] = {&tr.queries, &tr.keys, &tr.values};
  const int heads[3] = {H, G, G};
  const char* names[3] = {"W_query", "W_key", "W_value"};

  // Projections, then q[b, h, t, d] read from the projection by the variant's index formula.
  std::vector<float> proj[3];
  if (c.variant == Variant::FusedQkv) {
    tr.qkv = Tensor({b, T, 3 * D});
    tr.qkv.data = linear_loops(model.layer("qkv_layer"), input.data, N);
  }
  if (c.variant == Variant::Mla) {
    tr.latent = Tensor({b, T, c.latent_dim});
    tr.latent.data = linear_loops(model.layer("W_DKV"), input.data, N);
    proj[0] = linear_loops(model.layer("W_query"), input.data, N);
    proj[1] = linear_loops(model.layer("W_UK"), tr.latent.data, N);
    proj[2] = linear_loops(model.layer("W_UV"), tr.latent.data, N);
  } else if (c.variant == Variant::WeightSplit || c.variant == Variant::Gqa) {
    for (int part = 0; part < 3; ++part) proj[part] = linear_loops(model.layer(names[part]), input.data, N);
  }
  for (int part = 0; part < 3; ++part) {
    for (int h = 0; h < heads[part]; ++h) {
      std::vector<float> head_proj;
      if (c.variant == Variant::Wrapper)
        head_proj = linear_loops(model.layer("heads." + std::to_string(h) + "." + names[part]), input.data, N);
      for (int bi = 0; bi < b; ++bi)
        for (int t = 0; t < T; ++t)
          for (int d = 0; d < hd; ++d) {
            const std::int64_t row = static_cast<std::int64_t>(bi) * T + t;
            float val = 0.0f;
            if (c.variant == Variant::Wrapper)
              val = head_proj[static_cast<std::size_t>(row * hd + d)];
            else if (c.variant == Variant::FusedQkv)
              val = tr.qkv.data[static_cast<std::size_t>(row * 3 * D + h * 3 * hd + part * hd + d)];
            else
              val = proj[part][static_cast<std::size_t>(row * heads[part] * hd + h * hd + d)];
            per_head[part]->at({bi, h, t, d}) = val;
            merged[part]->at({bi, t, static_cast<std::int64_t>(h) * hd + d}) = val;
          }
    }
  }
  const auto [q_att, k_att] = norm_and_rotate_loops(model, tr);
  // gqa: query head h reads K/V head h / (H / G), as repeat_interleave(H / G, dim=1) lays them out.
  const auto kv_of = [&](int h) { return h / (H / G); };
  if (c.variant == Variant::Gqa) {
    tr.k_expanded = tr.v_expanded = Tensor({b, H, T, hd});
    for (int bi = 0; bi < b; ++bi)
      for (int h = 0; h < H; ++h)
        for (int t = 0; t < T; ++t)
          for (int d = 0; d < hd; ++d) {
            tr.k_expanded.at({bi, h, t, d}) = k_att->at({bi, kv_of(h), t, d});
            tr.v_expanded.at({bi, h, t, d}) = tr.v.at({bi, kv_of(h), t, d});
          }
  }

  // Scores and weights per (batch, head) by the attention oracle, which asks the mask of every cell.
  tr.scores = tr.weights = Tensor({b, H, T, T});
  const AttentionMask mask = attention_mask(c);
  const auto TT = static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
  for (int bi = 0; bi < b; ++bi)
    for (int h = 0; h < H; ++h) {
      const std::size_t pair = static_cast<std::size_t>(bi * H + h), kv = static_cast<std::size_t>(bi * G + kv_of(h));
      const std::vector<double> q = pair_rows(*q_att, pair, T, hd), k = pair_rows(*k_att, kv, T, hd);
      const detail::ReferenceAttention a =
          detail::attention_reference(q.data(), k.data(), T, T, hd, 0, 0, mask, bi, detail::score_scale(c));
      for (std::size_t e = 0; e < TT; ++e) {
        tr.scores.data[pair * TT + e] = static_cast<float>(a.scores[e]);
        tr.weights.data[pair * TT + e] = static_cast<float>(a.weights[e]);
      }
    }

  if (c.training && c.dropout > 0.0) {
    tr.dropped = Tensor({b, H, T, T});
    tr.keep.assign(static_cast<std::size_t>(tr.weights.numel()), 0);
    std::mt19937 gen = model.rng_after_init;
    auto draw = [&](int bi, int h) {
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) {
          const bool kept = torch_uniform53(gen) < 1.0 - c.dropout;
          tr.keep[static_cast<std::size_t>(tr.weights.offset({bi, h, i, j}))] = kept;
          tr.dropped.at({bi, h, i, j}) =
              kept ? tr.weights.at({bi, h, i, j}) * (1.0f / static_cast<float>(1.0 - c.dropout)) : 0.0f;
        }
    };
    if (c.variant == Variant::Wrapper) {
      for (int h = 0; h < H; ++h)
        for (int bi = 0; bi < b; ++bi) draw(bi, h);
    } else {
      for (int bi = 0; bi < b; ++bi)
        for (int h = 0; h < H; ++h) draw(bi, h);
    }
  }
  const Tensor& wd = tr.weights_after_dropout();

  tr.context = Tensor({b, H, T, hd});
  tr.context_merged = Tensor({b, T, M});
  for (int bi = 0; bi < b; ++bi)
    for (int h = 0; h < H; ++h) {
      const std::size_t pair = static_cast<std::size_t>(bi * H + h), kv = static_cast<std::size_t>(bi * G + kv_of(h));
      const std::vector<double> v = pair_rows(tr.v, kv, T, hd), w = pair_rows(wd, pair, T, T);
      const std::vector<double> ctx = detail::context_reference(w, v.data(), T, T, hd);
      for (int i = 0; i < T; ++i)
        for (int d = 0; d < hd; ++d) {
          const auto x = static_cast<float>(ctx[static_cast<std::size_t>(i) * hd + d]);
          tr.context.at({bi, h, i, d}) = x;
          tr.context_merged.at({bi, i, static_cast<std::int64_t>(h) * hd + d}) = x;
        }
    }

  if (c.variant == Variant::Wrapper) {
    tr.output = tr.context_merged;
  } else {
    tr.output = Tensor({b, T, output_dim(c)});
    tr.output.data = linear_loops(model.layer(c.variant == Variant::FusedQkv ? "linear_layer" : "out_proj"),
                                  tr.context_merged.data, N);
  }
  return tr;
}

}  // namespace mhaviz
