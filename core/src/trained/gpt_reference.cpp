// The oracle of gpt_forward: the same GPT-2 forward as plain loops over the formulas, with
// double accumulation. Slow on purpose; tests hold the fast path to it on every backend.
#include <cmath>

#include "kernels/attention_reference.hpp"
#include "mhaviz/gpt_forward.hpp"

namespace mhaviz {
namespace {

using Rows = std::vector<double>;  // (T, width) row-major

// x (T, in) -> x · Wᵀ + b (T, out) with W [out, in].
Rows linear_loops(const Linear& l, const Rows& x, int T) {
  const std::vector<float> w = gpt_linear_weight(l);
  Rows y(static_cast<std::size_t>(T) * static_cast<std::size_t>(l.out));
  for (int t = 0; t < T; ++t)
    for (int o = 0; o < l.out; ++o) {
      double acc = l.bias.empty() ? 0.0 : l.bias[static_cast<std::size_t>(o)];
      for (int i = 0; i < l.in; ++i)
        acc += x[static_cast<std::size_t>(t) * l.in + i] * w[static_cast<std::size_t>(o) * l.in + i];
      y[static_cast<std::size_t>(t) * l.out + o] = acc;
    }
  return y;
}

// Biased variance, as torch.nn.LayerNorm and the book's LayerNorm.
Rows layer_norm_loops(const Rows& x, int T, int C, const std::vector<float>& w, const std::vector<float>& b,
                      float eps) {
  Rows y(x.size());
  for (int t = 0; t < T; ++t) {
    const double* r = x.data() + static_cast<std::size_t>(t) * C;
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < C; ++i) mean += r[i];
    mean /= C;
    for (int i = 0; i < C; ++i) var += (r[i] - mean) * (r[i] - mean);
    var /= C;
    for (int i = 0; i < C; ++i)
      y[static_cast<std::size_t>(t) * C + i] =
          (r[i] - mean) / std::sqrt(var + eps) * w[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)];
  }
  return y;
}

Tensor to_tensor(const Rows& x, Shape shape) {
  Tensor t(std::move(shape));
  for (std::size_t i = 0; i < x.size(); ++i) t.data[i] = static_cast<float>(x[i]);
  return t;
}

}  // namespace

GptTrace gpt_forward_reference(const GptModel& m, std::span<const int> ids) {
  const GptConfig& c = m.config;
  const int T = static_cast<int>(ids.size()), C = c.n_embd, H = c.n_head, hd = c.head_dim(), V = c.vocab_size;
  GptTrace tr;
  tr.model = nullptr;  // never reused by gpt_forward
  tr.ids.assign(ids.begin(), ids.end());
  Rows resid(static_cast<std::size_t>(T) * C);
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < C; ++d)
      resid[static_cast<std::size_t>(t) * C + d] =
          static_cast<double>(m.wte[static_cast<std::size_t>(ids[static_cast<std::size_t>(t)]) * C + d]) +
          m.wpe[static_cast<std::size_t>(t) * C + d];
  tr.embeddings = to_tensor(resid, {1, T, C});

  for (const GptBlock& blk : m.blocks) {
    GptLayerTrace L;
    const Rows x = c.attn_only ? resid : layer_norm_loops(resid, T, C, blk.ln1_weight, blk.ln1_bias, c.layer_norm_eps);
    L.x = to_tensor(x, {1, T, C});
    const Rows qkv = linear_loops(blk.qkv, x, T);
    // q[h, t, d] = qkv[t, part·C + h·hd + d]
    L.mask = gpt_attention_mask(c);
    L.q = L.k = L.v = L.context = Tensor({1, H, T, hd});
    L.weights = Tensor({1, H, T, T});
    Rows merged(static_cast<std::size_t>(T) * C);
    for (int h = 0; h < H; ++h) {
      Rows heads[3];
      Tensor* out[3] = {&L.q, &L.k, &L.v};
      for (int part = 0; part < 3; ++part) {
        heads[part].resize(static_cast<std::size_t>(T) * hd);
        for (int t = 0; t < T; ++t)
          for (int d = 0; d < hd; ++d) {
            const double e = qkv[static_cast<std::size_t>(t) * 3 * C + part * C + h * hd + d];
            heads[part][static_cast<std::size_t>(t) * hd + d] = e;
            out[part]->at({0, h, t, d}) = static_cast<float>(e);
          }
      }
      const detail::ReferenceAttention a = detail::attention_reference(
          heads[0].data(), heads[1].data(), T, T, hd, 0, 0, L.mask, 0, detail::ScoreScale::sqrt_head_dim(hd));
      const Rows ctx = detail::context_reference(a.weights, heads[2].data(), T, T, hd);
      for (int i = 0; i < T; ++i) {
        for (int j = 0; j < T; ++j)
          L.weights.at({0, h, i, j}) = static_cast<float>(a.weights[static_cast<std::size_t>(i) * T + j]);
        for (int d = 0; d < hd; ++d) {
          const double e = ctx[static_cast<std::size_t>(i) * hd + d];
          L.context.at({0, h, i, d}) = static_cast<float>(e);
          merged[static_cast<std::size_t>(i) * C + h * hd + d] = e;
        }
      }
    }
    const Rows proj = linear_loops(blk.proj, merged, T);
    for (std::size_t i = 0; i < resid.size(); ++i) resid[i] += proj[i];
    L.resid_mid = to_tensor(resid, {1, T, C});
    if (c.attn_only) {
      L.resid = L.resid_mid;
      tr.layers.push_back(std::move(L));
      continue;
    }
    Rows h = linear_loops(blk.fc, layer_norm_loops(resid, T, C, blk.ln2_weight, blk.ln2_bias, c.layer_norm_eps), T);
    for (double& e : h) e = 0.5 * e * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (e + 0.044715 * e * e * e)));
    const Rows out = linear_loops(blk.fc_proj, h, T);
    for (std::size_t i = 0; i < resid.size(); ++i) resid[i] += out[i];
    L.resid = to_tensor(resid, {1, T, C});
    tr.layers.push_back(std::move(L));
  }

  const Rows fn = c.attn_only ? resid : layer_norm_loops(resid, T, C, m.lnf_weight, m.lnf_bias, c.layer_norm_eps);
  tr.final_norm = to_tensor(fn, {1, T, C});
  const std::vector<float> head = m.tied_head() ? m.wte : gpt_linear_weight(m.lm_head);
  tr.logits_last = Tensor({V});
  for (int v = 0; v < V; ++v) {
    double acc = 0.0;
    for (int d = 0; d < C; ++d)
      acc += fn[static_cast<std::size_t>(T - 1) * C + d] * head[static_cast<std::size_t>(v) * C + d];
    tr.logits_last.data[static_cast<std::size_t>(v)] = static_cast<float>(acc);
  }
  return tr;
}

}  // namespace mhaviz
