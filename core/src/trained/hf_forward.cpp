// The forward of today's decoder models (hf_model.hpp): one block function whose steps the
// config switches on or off per architecture. Products in the project's kernel (gemm.hpp)
// unless the backend is OpenBLAS, element-wise stages over threads (parallel.hpp), attention
// in the one routine every model of the core uses (attention.hpp).
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/attention.hpp"
#include "kernels/head_split.hpp"
#include "kernels/linear.hpp"
#include "kernels/parallel.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "mhaviz/hf_model.hpp"

namespace mhaviz {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const RowMat>;

detail::RmsWeight norm_form(const HfConfig& c) {
  return c.gemma_norms ? detail::RmsWeight::OnePlus : detail::RmsWeight::Plain;
}

void check_ids(const HfConfig& c, std::span<const int> ids) {
  if (ids.empty()) throw std::invalid_argument("hf_forward: no tokens");
  if (c.max_position_embeddings > 0 && static_cast<std::int64_t>(ids.size()) > c.max_position_embeddings)
    throw std::invalid_argument("hf_forward: " + std::to_string(ids.size()) +
                                " tokens, longer than max_position_embeddings " +
                                std::to_string(c.max_position_embeddings));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      throw std::invalid_argument("hf_forward: token " + std::to_string(i) + " is id " + std::to_string(ids[i]) +
                                  ", not in [0, " + std::to_string(c.vocab_size) + ")");
}

// g (rows, I) = act(g) ⊙ u: SiLU x·σ(x), or torch's tanh GELU, in float as torch computes them.
void gated_activation(float* g, const float* u, std::int64_t rows, int I, HfConfig::Activation act) {
  detail::parallel_for(rows, static_cast<std::int64_t>(I) * 12, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = (r1 - r0) * I;
    Eigen::Map<Eigen::ArrayXf> x(g + r0 * I, n);
    const Eigen::Map<const Eigen::ArrayXf> up(u + r0 * I, n);
    if (act == HfConfig::Activation::SiLU) {
      x = x / (1.0f + (-x).exp()) * up;
    } else {
      const float c = 0.7978845608028654f;  // √(2/π)
      x = 0.5f * x * (1.0f + (c * (x + 0.044715f * x.cube())).tanh()) * up;
    }
  });
}

// resid (T, C) += out, or += RMSNorm(out) with Gemma's post-sublayer norm w.
void add_residual(float* resid, std::vector<float>& out, std::int64_t T, int C, const std::vector<float>& w,
                  const HfConfig& c) {
  if (!w.empty()) detail::rms_norm(out.data(), out.data(), T, C, w.data(), c.rms_norm_eps, norm_form(c));
  const std::int64_t n = T * C;
  for (std::int64_t i = 0; i < n; ++i) resid[i] += out[static_cast<std::size_t>(i)];
}

// The attention sublayer of block b on resid (T, C): fills L.weights and s.out (T, C).
void attention_sublayer(const HfModel& m, const HfBlock& b, const float* resid, int T, HfLayerTrace& L, HfScratch& s,
                        bool kernel) {
  const HfConfig& c = m.config;
  const int C = c.hidden_size, H = c.num_attention_heads, G = c.num_key_value_heads, hd = c.head_dim;
  // 1. Input norm and the three projections.
  const float* x = L.x.ptr();
  detail::rms_norm(resid, L.x.ptr(), T, C, b.input_norm.data(), c.rms_norm_eps, norm_form(c));
  detail::linear_into(b.q, x, T, s.q.data(), H * hd, kernel);
  detail::linear_into(b.k, x, T, s.k.data(), G * hd, kernel);
  detail::linear_into(b.v, x, T, s.v.data(), G * hd, kernel);
  // 2. QK-norm over each head's hd values, then RoPE at positions 0 … T − 1, both on the
  // (T, heads, hd) rows as projected.
  if (!b.q_norm.empty()) {
    detail::rms_norm(s.q.data(), s.q.data(), static_cast<std::int64_t>(T) * H, hd, b.q_norm.data(), c.rms_norm_eps,
                     norm_form(c));
    detail::rms_norm(s.k.data(), s.k.data(), static_cast<std::int64_t>(T) * G, hd, b.k_norm.data(), c.rms_norm_eps,
                     norm_form(c));
  }
  const std::vector<double>& f = b.sliding ? m.inv_freq_local : m.inv_freq_global;
  detail::rope(s.q.data(), detail::RopeBlock::tokens_major(T, H, hd), 0, f);
  detail::rope(s.k.data(), detail::RopeBlock::tokens_major(T, G, hd), 0, f);
  // 3. Per head: (1, H, T, hd) and (1, G, T, hd).
  detail::split_heads(s.q.data(), H * hd, 0, hd, 1, T, H, hd, s.qh.data(), T, 0, nullptr);
  detail::split_heads(s.k.data(), G * hd, 0, hd, 1, T, G, hd, s.kh.data(), T, 0, nullptr);
  detail::split_heads(s.v.data(), G * hd, 0, hd, 1, T, G, hd, s.vh.data(), T, 0, nullptr);
  // 4. Grouped-query attention with the layer's mask and the model's scale.
  detail::AttentionJob job;
  job.heads = H;
  job.kv_heads = G;
  job.rows = T;
  job.keys = T;
  job.head_dim = hd;
  job.q = s.qh.data();
  job.k = s.kh.data();
  job.v = s.vh.data();
  job.q_stride = job.kv_stride = job.context_stride = static_cast<std::int64_t>(T) * hd;
  job.mask = L.mask;
  job.scale = c.gemma_norms ? detail::ScoreScale::multiply(static_cast<float>(c.score_scale()))
                            : detail::ScoreScale::sqrt_head_dim(hd);
  job.weights = L.weights.ptr();
  job.out_stride = static_cast<std::int64_t>(T) * T;
  job.context = s.ctx.data();
  job.kernel = kernel;
  detail::attention(job, s.keys);
  // 5. Merge heads and project.
  detail::merge_heads(s.ctx.data(), 1, T, H, hd, T, 0, s.merged.data());
  detail::linear_into(b.o, s.merged.data(), T, s.out.data(), C, kernel);
}

// The MLP sublayer on resid (T, C): s.out (T, C) = down(act(gate(n)) ⊙ up(n)).
void mlp_sublayer(const HfModel& m, const HfBlock& b, const float* resid, int T, HfScratch& s, bool kernel) {
  const HfConfig& c = m.config;
  const int C = c.hidden_size, I = c.intermediate_size;
  const std::vector<float>& norm = c.gemma_norms ? b.pre_ff_norm : b.post_attn_norm;
  detail::rms_norm(resid, s.x.data(), T, C, norm.data(), c.rms_norm_eps, norm_form(c));
  detail::linear_into(b.gate, s.x.data(), T, s.gate.data(), I, kernel);
  detail::linear_into(b.up, s.x.data(), T, s.up.data(), I, kernel);
  gated_activation(s.gate.data(), s.up.data(), T, I, c.activation);
  detail::linear_into(b.down, s.gate.data(), T, s.out.data(), C, kernel);
}

}  // namespace

HfTrace hf_forward(const HfModel& m, std::span<const int> ids) {
  HfTrace tr;
  hf_forward(m, ids, tr);
  return tr;
}

void hf_forward(const HfModel& m, std::span<const int> ids, HfTrace& tr) {
  const HfConfig& c = m.config;
  check_ids(c, ids);
  const int T = static_cast<int>(ids.size()), C = c.hidden_size, H = c.num_attention_heads, G = c.num_key_value_heads,
            hd = c.head_dim, I = c.intermediate_size;
  const bool kernel = backend() != Backend::OpenBlas;  // read once: one forward, one backend
  const auto rows = [T](std::int64_t cols) { return static_cast<std::size_t>(T) * static_cast<std::size_t>(cols); };

  tr.ids.assign(ids.begin(), ids.end());
  HfScratch& s = tr.scratch;
  for (std::vector<float>* v : {&s.resid, &s.x, &s.out}) v->resize(rows(C));
  for (std::vector<float>* v : {&s.q, &s.qh, &s.ctx, &s.merged}) v->resize(rows(H * hd));
  for (std::vector<float>* v : {&s.k, &s.v, &s.kh, &s.vh}) v->resize(rows(G * hd));
  for (std::vector<float>* v : {&s.gate, &s.up}) v->resize(rows(I));
  std::vector<float>& resid = s.resid;

  // 1. Embedding (Gemma: · √C as a float).
  const float scale = static_cast<float>(c.embedding_scale);
  for (int i = 0; i < T; ++i) {
    float* r = resid.data() + static_cast<std::int64_t>(i) * C;
    m.embedding_row(ids[static_cast<std::size_t>(i)], r);
    if (c.embedding_scale != 1.0)
      for (int d = 0; d < C; ++d) r[d] *= scale;
  }

  // 2. The blocks.
  tr.layers.resize(m.blocks.size());
  for (std::size_t l = 0; l < m.blocks.size(); ++l) {
    const HfBlock& b = m.blocks[l];
    HfLayerTrace& L = tr.layers[l];
    L.mask = m.layer_mask(static_cast<int>(l));
    // Every cell is written (hidden ones 0): a tensor of the right shape is reused as it is.
    if (L.weights.shape != Shape{1, H, T, T}) L.weights = Tensor({1, H, T, T}, 0.0f);
    if (L.x.shape != Shape{1, T, C}) L.x = Tensor({1, T, C}, 0.0f);
    attention_sublayer(m, b, resid.data(), T, L, s, kernel);
    add_residual(resid.data(), s.out, T, C, c.gemma_norms ? b.post_attn_norm : std::vector<float>{}, c);
    mlp_sublayer(m, b, resid.data(), T, s, kernel);
    add_residual(resid.data(), s.out, T, C, b.post_ff_norm, c);
  }

  // 3. Final norm and the last position's logits.
  if (tr.final_norm.shape != Shape{1, T, C}) tr.final_norm = Tensor({1, T, C}, 0.0f);
  detail::rms_norm(resid.data(), tr.final_norm.ptr(), T, C, m.final_norm.data(), c.rms_norm_eps, norm_form(c));
  tr.logits_last.shape = {c.vocab_size};
  tr.logits_last.data = hf_logits(m, tr, T - 1);
}

std::vector<float> hf_logits(const HfModel& m, const HfTrace& tr, int pos) {
  const int C = m.config.hidden_size, V = m.config.vocab_size;
  if (pos < 0 || pos >= tr.tokens())
    throw std::out_of_range("hf_logits: position " + std::to_string(pos) + " is not in [0, " +
                            std::to_string(tr.tokens()) + ")");
  const float* x = tr.final_norm.ptr() + static_cast<std::int64_t>(pos) * C;
  std::vector<float> logits(static_cast<std::size_t>(V));
  if (!m.lm_head.weight.empty() || !m.lm_head.packed.empty()) {
    detail::linear_into(m.lm_head, x, 1, logits.data(), V, backend() != Backend::OpenBlas);
  } else {  // tied on OpenBLAS: the embedding itself
    Eigen::Map<Eigen::VectorXf>(logits.data(), V).noalias() =
        CMap(m.embed.data(), V, C) * Eigen::Map<const Eigen::VectorXf>(x, C);
  }
  return logits;
}

double hf_forward_flops(const HfConfig& c, int T) {
  const double C = c.hidden_size, Q = static_cast<double>(c.num_attention_heads) * c.head_dim,
               KV = static_cast<double>(c.num_key_value_heads) * c.head_dim, I = c.intermediate_size;
  double per_layer = 0.0;
  for (int i = 0; i < T; ++i) per_layer += 2.0 * (C * Q * 2.0 + C * KV * 2.0 + 3.0 * C * I) + 4.0 * Q * (i + 1);
  return per_layer * c.num_hidden_layers + 2.0 * C * c.vocab_size;
}

}  // namespace mhaviz
