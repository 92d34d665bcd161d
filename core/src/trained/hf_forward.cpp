// The forward of today's decoder models (hf_model.hpp): one block function whose steps the
// config switches on or off per architecture. Products in the project's kernel (gemm.hpp)
// unless the backend is OpenBLAS, element-wise stages over threads (parallel.hpp), attention
// in the one routine every model of the core uses (attention.hpp).
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "hf_block.hpp"
#include "kernels/attention.hpp"
#include "kernels/head_split.hpp"
#include "kernels/linear.hpp"
#include "kernels/parallel.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "mhaviz/hf_model.hpp"
#include "trace_rows.hpp"

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
// Each row goes through an aligned buffer, so Eigen's vector and scalar paths fall on the same
// columns wherever the row lies: a row has the same bits in a fresh forward and an edit's.
void gated_activation(float* g, const float* u, std::int64_t rows, int I, HfConfig::Activation act) {
  detail::parallel_for(rows, static_cast<std::int64_t>(I) * 12, [&](std::int64_t r0, std::int64_t r1) {
    Eigen::ArrayXf x(I), up(I);
    for (std::int64_t r = r0; r < r1; ++r) {
      float* row = g + r * I;
      std::copy(row, row + I, x.data());
      std::copy(u + r * I, u + (r + 1) * I, up.data());
      if (act == HfConfig::Activation::SiLU) {
        x = x / (1.0f + (-x).exp()) * up;
      } else {
        const float c = 0.7978845608028654f;  // √(2/π)
        x = 0.5f * x * (1.0f + (c * (x + 0.044715f * x.cube())).tanh()) * up;
      }
      std::copy(x.data(), x.data() + I, row);
    }
  });
}

// resid (R, C) += out, or += RMSNorm(out) with Gemma's post-sublayer norm w.
void add_residual(float* resid, std::vector<float>& out, std::int64_t R, int C, const std::vector<float>& w,
                  const HfConfig& c) {
  if (!w.empty()) detail::rms_norm(out.data(), out.data(), R, C, w.data(), c.rms_norm_eps, norm_form(c));
  const std::int64_t n = R * C;
  for (std::int64_t i = 0; i < n; ++i) resid[i] += out[static_cast<std::size_t>(i)];
}

// The attention sublayer of block b for rows [start, T) of a T-token sequence: resid holds
// those R = T − start rows (R, C); fills their rows of L.x, L.k, L.v, L.weights and
// L.context (the edits' context step runs on it, when set), and s.out (R, C). Rows < start of L.k and L.v are the
// kept keys and values they attend to.
void attention_sublayer(const HfModel& m, const HfBlock& b, const float* resid, int start, int T, HfLayerTrace& L,
                        HfScratch& s, bool kernel, const detail::HfEdits* edits, int layer) {
  const HfConfig& c = m.config;
  const int C = c.hidden_size, H = c.num_attention_heads, G = c.num_key_value_heads, hd = c.head_dim, R = T - start;
  // 1. Input norm and the three projections.
  float* x = L.x.ptr() + static_cast<std::int64_t>(start) * C;
  detail::rms_norm(resid, x, R, C, b.input_norm.data(), c.rms_norm_eps, norm_form(c));
  const Linear* qkv[] = {&b.q, &b.k, &b.v};
  float* const qkv_out[] = {s.q.data(), s.k.data(), s.v.data()};
  detail::linears_into(qkv, x, R, qkv_out, kernel);
  // 2. QK-norm over each head's hd values, then RoPE at positions start … T − 1, both on the
  // (R, heads, hd) rows as projected.
  if (!b.q_norm.empty()) {
    detail::rms_norm(s.q.data(), s.q.data(), static_cast<std::int64_t>(R) * H, hd, b.q_norm.data(), c.rms_norm_eps,
                     norm_form(c));
    detail::rms_norm(s.k.data(), s.k.data(), static_cast<std::int64_t>(R) * G, hd, b.k_norm.data(), c.rms_norm_eps,
                     norm_form(c));
  }
  const std::vector<double>& f = b.sliding ? m.inv_freq_local : m.inv_freq_global;
  detail::rope(s.q.data(), detail::RopeBlock::tokens_major(R, H, hd), start, f);
  detail::rope(s.k.data(), detail::RopeBlock::tokens_major(R, G, hd), start, f);
  // 3. Per head, rows [start, T) of (1, H, T, hd) and (1, G, T, hd).
  detail::split_heads(s.q.data(), H * hd, 0, hd, 1, R, H, hd, s.qh.data(), T, start, nullptr);
  detail::split_heads(s.k.data(), G * hd, 0, hd, 1, R, G, hd, L.k.ptr(), T, start, nullptr);
  detail::split_heads(s.v.data(), G * hd, 0, hd, 1, R, G, hd, L.v.ptr(), T, start, nullptr);
  // 4. Grouped-query attention of rows [start, T) against keys [0, T), with the layer's mask
  // and the model's scale.
  detail::AttentionJob job = detail::per_head_job(1, H, T, hd, start, s.qh.data(), L.k.ptr(), L.v.ptr(),
                                                  L.weights.ptr(), L.context.ptr(), kernel);
  job.kv_heads = G;
  job.mask = L.mask;
  job.scale = c.gemma_norms ? detail::ScoreScale::multiply(static_cast<float>(c.score_scale()))
                            : detail::ScoreScale::sqrt_head_dim(hd);
  job.keys_unchanged = start;  // L.k's rows before start are the kept keys L.key_panels holds
  detail::attention(job, L.key_panels);
  if (edits && edits->context) edits->context(layer, L);
  // 5. Merge heads and project.
  detail::merge_heads(L.context.ptr(), 1, R, H, hd, T, start, s.merged.data());
  detail::linear_into(b.o, s.merged.data(), R, s.out.data(), C, kernel);
}

// The MLP sublayer on resid (R, C): s.out (R, C) = down(act(gate(n)) ⊙ up(n)).
void mlp_sublayer(const HfModel& m, const HfBlock& b, const float* resid, int R, HfScratch& s, bool kernel) {
  const HfConfig& c = m.config;
  const int C = c.hidden_size, I = c.intermediate_size;
  const std::vector<float>& norm = c.gemma_norms ? b.pre_ff_norm : b.post_attn_norm;
  detail::rms_norm(resid, s.x.data(), R, C, norm.data(), c.rms_norm_eps, norm_form(c));
  const Linear* gate_up[] = {&b.gate, &b.up};
  float* const gate_up_out[] = {s.gate.data(), s.up.data()};
  detail::linears_into(gate_up, s.x.data(), R, gate_up_out, kernel);
  gated_activation(s.gate.data(), s.up.data(), R, I, c.activation);
  detail::linear_into(b.down, s.gate.data(), R, s.out.data(), C, kernel);
}

// First row whose result can differ from what tr holds for ids: the first changed id (T when
// ids are tr's ids or a prefix of them); 0 when tr came from another model or backend, and on
// OpenBLAS (see hf_forward).
int first_changed(const HfModel& m, std::span<const int> ids, const HfTrace& tr, Backend be) {
  if (be == Backend::OpenBlas || m.serial == 0 || tr.model_serial != m.serial || tr.backend != be ||
      tr.layers.size() != m.blocks.size())
    return 0;
  return detail::shared_prefix(ids, tr.ids);
}

}  // namespace

namespace detail {

void hf_shape_trace(const HfModel& m, std::span<const int> ids, int start, HfTrace& tr) {
  const HfConfig& c = m.config;
  const int T = static_cast<int>(ids.size()), C = c.hidden_size, H = c.num_attention_heads, G = c.num_key_value_heads,
            hd = c.head_dim, I = c.intermediate_size, R = T - start;
  const auto rows = [](int n, std::int64_t cols) {
    return static_cast<std::size_t>(n) * static_cast<std::size_t>(cols);
  };
  // Until the rows are written the trace names no model: a forward that throws part-way
  // leaves nothing a later one would keep.
  tr.model_serial = 0;
  tr.ids.assign(ids.begin(), ids.end());
  HfScratch& s = tr.scratch;
  for (std::vector<float>* v : {&s.embedded, &s.x, &s.out}) v->resize(rows(R, C));
  for (std::vector<float>* v : {&s.q, &s.merged}) v->resize(rows(R, H * hd));
  s.qh.resize(rows(T, H * hd));
  for (std::vector<float>* v : {&s.k, &s.v}) v->resize(rows(R, G * hd));
  for (std::vector<float>* v : {&s.gate, &s.up}) v->resize(rows(R, I));
  tr.layers.resize(m.blocks.size());
  for (std::size_t l = 0; l < m.blocks.size(); ++l) {
    HfLayerTrace& L = tr.layers[l];
    L.mask = m.layer_mask(static_cast<int>(l));
    detail::resize_rows(L.x, T, C);
    detail::resize_rows(L.resid, T, C);
    detail::resize_heads(L.k, G, T, hd, start);
    detail::resize_heads(L.v, G, T, hd, start);
    detail::resize_heads(L.context, H, T, hd, start);
    detail::resize_heads(L.weights, H, T, T, start);  // every cell of rows ≥ start is written (hidden ones 0)
  }
  detail::resize_rows(tr.final_norm, T, C);
}

void hf_layer_rows(const HfModel& m, std::span<const int> ids, int from, int start, HfTrace& tr, bool kernel,
                   const HfEdits* edits) {
  const HfConfig& c = m.config;
  const int T = static_cast<int>(ids.size()), C = c.hidden_size, R = T - start, L = static_cast<int>(m.blocks.size());
  const std::int64_t first = static_cast<std::int64_t>(start) * C;
  HfScratch& s = tr.scratch;
  const float* in = nullptr;
  if (from == 0) {
    // The embedding of rows [start, T) (Gemma: · √C as a float).
    const float scale = static_cast<float>(c.embedding_scale);
    for (int i = 0; i < R; ++i) {
      float* r = s.embedded.data() + static_cast<std::int64_t>(i) * C;
      m.embedding_row(ids[static_cast<std::size_t>(start + i)], r);
      if (c.embedding_scale != 1.0)
        for (int d = 0; d < C; ++d) r[d] *= scale;
    }
    in = s.embedded.data();
  } else {
    in = tr.layers[static_cast<std::size_t>(from - 1)].resid.ptr() + first;
  }
  for (int l = from; l < L; ++l) {
    const HfBlock& b = m.blocks[static_cast<std::size_t>(l)];
    HfLayerTrace& lt = tr.layers[static_cast<std::size_t>(l)];
    // The block works on its own residual rows, a copy of its input's.
    float* resid = lt.resid.ptr() + first;
    std::copy(in, in + static_cast<std::int64_t>(R) * C, resid);
    attention_sublayer(m, b, resid, start, T, lt, s, kernel, edits, l);
    add_residual(resid, s.out, R, C, c.gemma_norms ? b.post_attn_norm : std::vector<float>{}, c);
    mlp_sublayer(m, b, resid, R, s, kernel);
    add_residual(resid, s.out, R, C, b.post_ff_norm, c);
    if (edits && edits->resid) edits->resid(l, lt);
    in = resid;
  }
  detail::rms_norm(in, tr.final_norm.ptr() + first, R, C, m.final_norm.data(), c.rms_norm_eps, norm_form(c));
}

void hf_head_rows(const HfModel& m, const float* x, int rows, float* logits, bool kernel) {
  const int C = m.config.hidden_size, V = m.config.vocab_size;
  if (!m.lm_head.weight.empty() || !m.lm_head.packed.empty() || !m.lm_head.packed_bf16.empty()) {
    // The kernel sums every element in the same order whatever the row count; OpenBLAS may not.
    for (int r = 0; r < rows; r += kernel ? rows : 1)
      detail::linear_into(m.lm_head, x + static_cast<std::int64_t>(r) * C, kernel ? rows : 1,
                          logits + static_cast<std::int64_t>(r) * V, V, kernel);
  } else {  // tied on OpenBLAS: the embedding itself
    for (int r = 0; r < rows; ++r)
      Eigen::Map<Eigen::VectorXf>(logits + static_cast<std::int64_t>(r) * V, V).noalias() =
          CMap(m.embed.data(), V, C) * Eigen::Map<const Eigen::VectorXf>(x + static_cast<std::int64_t>(r) * C, C);
  }
}

}  // namespace detail

HfTrace hf_forward(const HfModel& m, std::span<const int> ids) {
  HfTrace tr;
  hf_forward(m, ids, tr);
  return tr;
}

void hf_forward(const HfModel& m, std::span<const int> ids, HfTrace& tr) {
  const HfConfig& c = m.config;
  check_ids(c, ids);
  const int T = static_cast<int>(ids.size());
  const Backend be = backend();  // read once: one forward, one backend
  const bool kernel = be != Backend::OpenBlas;
  const int start = first_changed(m, ids, tr, be);
  if (start == T && tr.tokens() == T) {
    tr.recomputed_from = T;
    return;
  }
  detail::hf_shape_trace(m, ids, start, tr);
  if (start < T) detail::hf_layer_rows(m, ids, 0, start, tr, kernel, nullptr);
  tr.model_serial = m.serial;
  tr.backend = be;
  tr.recomputed_from = start;
  tr.logits_last.shape = {c.vocab_size};
  tr.logits_last.data = hf_logits(m, tr, T - 1);
}

std::vector<float> hf_logits(const HfModel& m, const HfTrace& tr, int pos) {
  const int C = m.config.hidden_size, V = m.config.vocab_size;
  if (pos < 0 || pos >= tr.tokens())
    throw std::out_of_range("hf_logits: position " + std::to_string(pos) + " is not in [0, " +
                            std::to_string(tr.tokens()) + ")");
  std::vector<float> logits(static_cast<std::size_t>(V));
  detail::hf_head_rows(m, tr.final_norm.ptr() + static_cast<std::int64_t>(pos) * C, 1, logits.data(),
                       backend() != Backend::OpenBlas);
  return logits;
}

double hf_forward_flops(const HfConfig& c, int T, int from) {
  const double C = c.hidden_size, Q = static_cast<double>(c.num_attention_heads) * c.head_dim,
               KV = static_cast<double>(c.num_key_value_heads) * c.head_dim, I = c.intermediate_size;
  // The projections and the MLP, per row computed.
  double total = 2.0 * (C * Q * 2.0 + C * KV * 2.0 + 3.0 * C * I) * (T - from) * c.num_hidden_layers;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    // q·kᵀ and weights·v over the keys row i sees: i + 1, at most the window on a sliding
    // layer (as scripts/bench_floor.py counts them).
    const bool windowed = c.sliding_window > 0 && l < static_cast<int>(c.sliding.size()) && c.sliding[l];
    for (int i = from; i < T; ++i) total += 4.0 * Q * (windowed ? std::min(i + 1, c.sliding_window) : i + 1);
  }
  return total + 2.0 * C * c.vocab_size;
}

}  // namespace mhaviz
