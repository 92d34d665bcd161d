// The fast GPT forward (gpt_forward.hpp): Linears and attention products in the project's
// kernel (gemm.hpp) unless the backend is OpenBLAS, element-wise stages over threads.
// gpt_reference.cpp holds the loop version it is tested against.
#include "mhaviz/gpt_forward.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "gpt_block.hpp"
#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/head_split.hpp"
#include "kernels/linear.hpp"
#include "kernels/parallel.hpp"
#include "kernels/row_sums.hpp"
#include "trace_rows.hpp"
#include "weight_read.hpp"

namespace mhaviz {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

using detail::resize_heads;
using detail::resize_rows;

// in, out: (rows, C). LayerNorm with biased variance, statistics in double.
void layer_norm_rows(const float* in, float* out, int rows, int C, const std::vector<float>& w,
                     const std::vector<float>& b, float eps) {
  detail::parallel_for(rows, C * 4, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* x = in + r * C;
      float* y = out + r * C;
      const double mean = detail::row_sum(x, C) / C, var = detail::row_sum_squared_deviations(x, C, mean) / C;
      const double rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
      for (int i = 0; i < C; ++i)
        y[i] =
            static_cast<float>((x[i] - mean) * rstd) * w[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)];
    }
  });
}

// h: (rows, F) in place. GELU with torch's approximate='tanh'. Each row goes through an
// aligned buffer so Eigen's vector and scalar paths fall on the same columns every call:
// the same input gives the same bits wherever the rows are (incremental == fresh).
void gelu_rows(float* h, int rows, int F) {
  detail::parallel_for(rows, F * 8, [&](std::int64_t r0, std::int64_t r1) {
    Eigen::ArrayXf x(F);
    const float c = 0.7978845608028654f;  // √(2/π)
    for (std::int64_t r = r0; r < r1; ++r) {
      float* row = h + r * F;
      std::copy(row, row + F, x.data());
      x = 0.5f * x * (1.0f + (c * (x + 0.044715f * x.cube())).tanh());
      std::copy(x.data(), x.data() + F, row);
    }
  });
}

// y (rows, out) = x (rows, in) · Wᵀ + b; on OpenBLAS in blocks of kBlasRows (see the header).
void linear_rows(const Linear& l, const float* x, int rows, float* y, bool kernel) {
  const int step = kernel ? rows : kBlasRows;
  for (int r = 0; r < rows; r += step)
    detail::linear_into(l, x + static_cast<std::int64_t>(r) * l.in, std::min(step, rows - r),
                        y + static_cast<std::int64_t>(r) * l.out, l.out, kernel);
}

void check_ids(const GptConfig& c, std::span<const int> ids) {
  if (ids.empty()) throw std::invalid_argument("gpt_forward: no tokens");
  if (static_cast<std::int64_t>(ids.size()) > c.n_ctx)
    throw std::invalid_argument("gpt_forward: " + std::to_string(ids.size()) + " tokens, longer than the context of " +
                                std::to_string(c.n_ctx));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      throw std::invalid_argument("gpt_forward: token " + std::to_string(i) + " is id " + std::to_string(ids[i]) +
                                  ", not in [0, " + std::to_string(c.vocab_size) + ")");
}

// First row whose result can differ from what tr holds for ids: the first changed id (T when
// ids are tr's ids or a prefix of them), 0 when tr was computed elsewhere.
int first_changed(const GptModel& m, std::span<const int> ids, const GptTrace& tr, Backend be) {
  if (tr.model != &m || tr.backend != be || tr.layers.size() != m.blocks.size()) return 0;
  return detail::shared_prefix(ids, tr.ids);
}

}  // namespace

namespace detail {

void gpt_block_rows(const GptModel& m, const GptBlock& blk, const float* in, GptLayerTrace& L, GptTrace& tr, int start,
                    int T, bool kernel, const ContextEdit* edit) {
  const GptConfig& c = m.config;
  const int C = c.n_embd, H = c.n_head, hd = c.head_dim(), F = blk.fc.out, R = T - start;
  const std::int64_t off = static_cast<std::int64_t>(start) * C;

  // 1. x = LayerNorm_1(in) (attention-only: x = in); qkv (R, 3C) = x · W_qkvᵀ + b.
  if (c.attn_only)
    std::copy(in + off, in + off + static_cast<std::int64_t>(R) * C, L.x.ptr() + off);
  else
    layer_norm_rows(in + off, L.x.ptr() + off, R, C, blk.ln1_weight, blk.ln1_bias, c.layer_norm_eps);
  tr.scratch_qkv.resize(static_cast<std::size_t>(R) * 3 * C);
  linear_rows(blk.qkv, L.x.ptr() + off, R, tr.scratch_qkv.data(), kernel);

  // 2. Split: column part·C + h·hd + d of row r -> q/k/v[h, start + r, d].
  float* heads[3] = {L.q.ptr(), L.k.ptr(), L.v.ptr()};
  for (int part = 0; part < 3; ++part)
    detail::split_heads(tr.scratch_qkv.data(), 3 * C, static_cast<std::int64_t>(part) * C, hd, 1, R, H, hd, heads[part],
                        T, start, nullptr);

  // 3-5. Scores, mask, softmax and context of rows [start, T) against keys [0, T): the rows
  // kept from the last forward are the prefix their keys and values come from.
  detail::AttentionJob job = detail::per_head_job(1, H, T, hd, start, L.q.ptr(), L.k.ptr(), L.v.ptr(), L.weights.ptr(),
                                                  L.context.ptr(), kernel);
  job.mask = L.mask;
  job.keys_unchanged = start;  // L.k's rows before start are the keys L.key_panels was packed from
  detail::attention(job, L.key_panels);
  if (edit != nullptr) (*edit)(L);

  // 6. Merge heads (R, C), project, residual.
  tr.scratch_merged.resize(static_cast<std::size_t>(R) * C);
  detail::merge_heads(L.context.ptr(), 1, R, H, hd, T, start, tr.scratch_merged.data());
  tr.scratch_proj.resize(static_cast<std::size_t>(R) * C);
  linear_rows(blk.proj, tr.scratch_merged.data(), R, tr.scratch_proj.data(), kernel);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(R) * C; ++i)
    L.resid_mid.data[off + i] = in[off + i] + tr.scratch_proj[i];

  // 7. MLP: LayerNorm_2 -> fc -> GELU -> fc_proj, residual (attention-only: none).
  if (c.attn_only) {
    std::copy(L.resid_mid.ptr() + off, L.resid_mid.ptr() + off + static_cast<std::int64_t>(R) * C, L.resid.ptr() + off);
    return;
  }
  layer_norm_rows(L.resid_mid.ptr() + off, tr.scratch_merged.data(), R, C, blk.ln2_weight, blk.ln2_bias,
                  c.layer_norm_eps);
  tr.scratch_hidden.resize(static_cast<std::size_t>(R) * F);
  linear_rows(blk.fc, tr.scratch_merged.data(), R, tr.scratch_hidden.data(), kernel);
  gelu_rows(tr.scratch_hidden.data(), R, F);
  linear_rows(blk.fc_proj, tr.scratch_hidden.data(), R, tr.scratch_proj.data(), kernel);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(R) * C; ++i)
    L.resid.data[off + i] = L.resid_mid.data[off + i] + tr.scratch_proj[i];
}

void gpt_final_norm_rows(const GptModel& m, const float* in, float* out, int rows) {
  const GptConfig& c = m.config;
  if (c.attn_only)  // no final norm: the head reads the residual
    std::copy(in, in + static_cast<std::int64_t>(rows) * c.n_embd, out);
  else
    layer_norm_rows(in, out, rows, c.n_embd, m.lnf_weight, m.lnf_bias, c.layer_norm_eps);
}

void gpt_head_rows(const GptModel& m, const float* x, int rows, float* logits, Backend be) {
  const int C = m.config.n_embd, V = m.config.vocab_size;
  const bool kernel = be != Backend::OpenBlas;
  if (!m.tied_head()) {
    // The kernel sums every element in the same order whatever the row count; OpenBLAS may not.
    for (int r = 0; r < rows; r += kernel ? rows : 1)
      detail::linear_into(m.lm_head, x + static_cast<std::int64_t>(r) * C, kernel ? rows : 1,
                          logits + static_cast<std::int64_t>(r) * V, V, kernel);
  } else if (!m.tied_packed.packed.empty()) {
    detail::linear_into(m.tied_packed, x, rows, logits, V, true);
  } else {
    for (int r = 0; r < rows; ++r)
      Eigen::Map<Eigen::VectorXf>(logits + static_cast<std::int64_t>(r) * V, V).noalias() =
          CMap(m.wte.data(), V, C) * Eigen::Map<const Eigen::VectorXf>(x + static_cast<std::int64_t>(r) * C, C);
  }
}

}  // namespace detail

AttentionMask gpt_attention_mask(const GptConfig&) {
  AttentionMask m;
  m.causal = true;
  return m;
}

void prepare_gpt_forward(GptModel& m) {
  const bool kernel = backend() != Backend::OpenBlas;
  const int C = m.config.n_embd, V = m.config.vocab_size;
  auto prepare = [&](Linear& l) {
    if (kernel)
      detail::pack_linear(l, true);
    else
      detail::unpack_linear(l);
  };
  for (GptBlock& b : m.blocks)
    for (Linear* l : {&b.qkv, &b.proj, &b.fc, &b.fc_proj})
      if (l->out > 0) prepare(*l);  // attention-only blocks have no MLP
  if (!m.tied_head()) {
    m.lm_head.in = C;
    m.lm_head.out = V;
    prepare(m.lm_head);
    m.tied_packed = Linear();
  } else if (kernel && m.tied_packed.packed.empty()) {
    // wte stays as it is for the embedding lookup; the head gets its own packed copy.
    m.tied_packed.name = "lm_head (tied to wte)";
    m.tied_packed.in = C;
    m.tied_packed.out = V;
    m.tied_packed.packed = detail::pack_transposed(m.wte.data(), V, C);
  } else if (!kernel) {
    m.tied_packed = Linear();
  }
}

std::vector<float> gpt_linear_weight(const Linear& l) { return detail::linear_weight(l); }

void gpt_forward(const GptModel& m, std::span<const int> ids, GptTrace& tr) {
  const GptConfig& c = m.config;
  check_ids(c, ids);
  const int T = static_cast<int>(ids.size()), C = c.n_embd, H = c.n_head, hd = c.head_dim();
  const Backend be = backend();  // read once: one forward, one backend
  const bool kernel = be != Backend::OpenBlas;
  const int t = first_changed(m, ids, tr, be);
  if (t == T && tr.tokens() == T) {
    tr.recomputed_from = T;
    return;
  }
  const int start = std::min(T, kernel ? t : t / kBlasRows * kBlasRows);

  // Shapes for T, keeping rows < start.
  tr.model = &m;
  tr.backend = be;
  tr.ids.assign(ids.begin(), ids.end());
  tr.recomputed_from = start;
  tr.layers.resize(m.blocks.size());
  resize_rows(tr.embeddings, T, C);
  resize_rows(tr.final_norm, T, C);
  for (GptLayerTrace& L : tr.layers) {
    resize_rows(L.x, T, C);
    resize_rows(L.resid_mid, T, C);
    resize_rows(L.resid, T, C);
    L.mask = gpt_attention_mask(c);
    resize_heads(L.q, H, T, hd, start);
    resize_heads(L.k, H, T, hd, start);
    resize_heads(L.v, H, T, hd, start);
    resize_heads(L.context, H, T, hd, start);
    resize_heads(L.weights, H, T, T, start);
  }

  if (start < T) {
    // Token + position embeddings.
    for (int i = start; i < T; ++i) {
      const float* te = m.wte.data() + static_cast<std::int64_t>(ids[static_cast<std::size_t>(i)]) * C;
      const float* pe = m.wpe.data() + static_cast<std::int64_t>(i) * C;
      float* e = tr.embeddings.ptr() + static_cast<std::int64_t>(i) * C;
      for (int d = 0; d < C; ++d) e[d] = te[d] + pe[d];
    }
    const float* in = tr.embeddings.ptr();
    for (std::size_t l = 0; l < m.blocks.size(); ++l) {
      detail::gpt_block_rows(m, m.blocks[l], in, tr.layers[l], tr, start, T, kernel, nullptr);
      in = tr.layers[l].resid.ptr();
    }
    const std::int64_t off = static_cast<std::int64_t>(start) * C;
    detail::gpt_final_norm_rows(m, in + off, tr.final_norm.ptr() + off, T - start);
  }
  tr.logits_last.shape = {c.vocab_size};
  tr.logits_last.data = gpt_logits(m, tr, T - 1);
}

GptTrace gpt_forward(const GptModel& model, std::span<const int> ids) {
  GptTrace tr;
  gpt_forward(model, ids, tr);
  return tr;
}

std::vector<float> gpt_logits(const GptModel& m, const GptTrace& tr, int pos) {
  const int C = m.config.n_embd, V = m.config.vocab_size;
  if (pos < 0 || pos >= tr.tokens())
    throw std::out_of_range("gpt_logits: position " + std::to_string(pos) + " is not in [0, " +
                            std::to_string(tr.tokens()) + ")");
  std::vector<float> logits(static_cast<std::size_t>(V));
  detail::gpt_head_rows(m, tr.final_norm.ptr() + static_cast<std::int64_t>(pos) * C, 1, logits.data(), tr.backend);
  return logits;
}

NextToken next_token(const GptModel& m, const GptTrace& tr, int pos, int k) {
  // The last position's logits are the trace's (the same function made them): the LM head
  // reads as many weights as half of GPT-2 small's layers.
  const bool last =
      pos == tr.tokens() - 1 && tr.logits_last.data.size() == static_cast<std::size_t>(m.config.vocab_size);
  return next_token_from_logits(last ? tr.logits_last.data : gpt_logits(m, tr, pos), k);
}

NextToken next_token_from_logits(const std::vector<float>& logits, int k) {
  NextToken out;
  out.probs.resize(logits.size());
  const float mx = *std::max_element(logits.begin(), logits.end());
  // Each exp once (a logit lens of a 151,936-token vocabulary takes one such row per layer
  // and position): the same values and the same sum as taking it twice.
  std::vector<double> e(logits.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) sum += e[i] = std::exp(static_cast<double>(logits[i]) - mx);
  for (std::size_t i = 0; i < logits.size(); ++i) out.probs[i] = static_cast<float>(e[i] / sum);
  std::vector<int> order(logits.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  const auto n =
      static_cast<std::ptrdiff_t>(std::clamp<std::size_t>(static_cast<std::size_t>(std::max(k, 0)), 0, order.size()));
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](int a, int b) {
    const float pa = out.probs[static_cast<std::size_t>(a)], pb = out.probs[static_cast<std::size_t>(b)];
    return pa != pb ? pa > pb : a < b;
  });
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const int id = order[static_cast<std::size_t>(i)];
    out.top.push_back({id, out.probs[static_cast<std::size_t>(id)]});
  }
  return out;
}

double gpt_forward_flops(const GptConfig& c, int T, int from) {
  const double C = c.n_embd, F = 4.0 * c.n_embd;
  double per_layer = 0.0;
  for (int i = from; i < T; ++i) per_layer += 2.0 * (C * 3.0 * C + C * C + 2.0 * C * F) + 4.0 * C * (i + 1);
  return per_layer * c.n_layer + 2.0 * C * c.vocab_size;
}

namespace {

// The weights a forward of one row reads whole: every block's, the final norm's and the
// head's. Of wte and wpe it reads one row each, unless the head multiplies by wte itself (a
// tied head left unpacked).
detail::WeightBuffers weight_buffers(const GptModel& m) {
  detail::WeightBuffers out;
  if (m.tied_head() && m.tied_packed.packed.empty()) out.add(m.wte);
  for (const GptBlock& b : m.blocks) {
    for (const std::vector<float>* v : {&b.ln1_weight, &b.ln1_bias, &b.ln2_weight, &b.ln2_bias}) out.add(*v);
    for (const Linear* l : {&b.qkv, &b.proj, &b.fc, &b.fc_proj}) out.add(*l);
  }
  out.add(m.lnf_weight);
  out.add(m.lnf_bias);
  out.add(m.lm_head);
  out.add(m.tied_packed);
  return out;
}

}  // namespace

std::int64_t gpt_weight_bytes(const GptModel& model) { return weight_buffers(model).bytes(); }

std::uint64_t gpt_read_weights(const GptModel& model) { return weight_buffers(model).read_once(); }

}  // namespace mhaviz
