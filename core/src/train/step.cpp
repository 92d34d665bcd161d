// One training step's math over the whole model: forward (keeping every activation), backward
// of the mean cross-entropy, and AdamW. Shapes in train.hpp; each stage is an op of ops.hpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mhaviz/backend.hpp"
#include "mhaviz/train.hpp"
#include "kernels/parallel.hpp"
#include "train/ops.hpp"

namespace mhaviz::train {
namespace {

// Where block l's parameters start in the flat buffer (params and grads alike); -1: absent.
struct BlockOffsets {
  std::int64_t wq = -1, bq = -1, wo = -1, bo = -1;  // W_query's weight and bias; out_proj
  std::int64_t w1 = -1, b1 = -1, w2 = -1, b2 = -1;  // ff.layers.0 and .2
  std::int64_t n1s = -1, n1h = -1, n2s = -1, n2h = -1;
};

std::int64_t offset_of(const GptTrainModel& m, const std::string& name) {
  for (const ParamTensor& t : m.layout)
    if (t.name == name) return t.offset;
  return -1;
}

BlockOffsets block_offsets(const GptTrainModel& m, int l) {
  const std::string b = "trf_blocks." + std::to_string(l) + ".";
  return {offset_of(m, b + "att.W_query.weight"),  offset_of(m, b + "att.W_query.bias"),
          offset_of(m, b + "att.out_proj.weight"), offset_of(m, b + "att.out_proj.bias"),
          offset_of(m, b + "ff.layers.0.weight"),  offset_of(m, b + "ff.layers.0.bias"),
          offset_of(m, b + "ff.layers.2.weight"),  offset_of(m, b + "ff.layers.2.bias"),
          offset_of(m, b + "norm1.scale"),         offset_of(m, b + "norm1.shift"),
          offset_of(m, b + "norm2.scale"),         offset_of(m, b + "norm2.shift")};
}

// W_query, W_key, W_value as one (3C, C) weight and (3C) bias. Without biases the three
// weights follow one another in the buffer and are used in place; with them (weight, bias,
// weight, …) they are copied into `stacked`: 3C·C weights, then 3C biases.
struct Qkv {
  const float* w;
  const float* b;  // null without qkv_bias
};
Qkv qkv_weights(const float* params, const BlockOffsets& o, int C, std::vector<float>& stacked) {
  if (o.bq < 0) return {params + o.wq, nullptr};
  const std::int64_t CC = static_cast<std::int64_t>(C) * C;
  stacked.resize(static_cast<std::size_t>(3 * CC + 3 * C));
  for (int k = 0; k < 3; ++k) {
    // Part k's weight sits k·(CC + C) floats after W_query's, its bias C·C after its weight.
    const float* w = params + o.wq + k * (CC + C);
    std::copy(w, w + CC, stacked.begin() + k * CC);
    std::copy(w + CC, w + CC + C, stacked.begin() + 3 * CC + k * C);
  }
  return {stacked.data(), stacked.data() + 3 * CC};
}

// The reverse for gradients: stacked (3C·C weights, then 3C biases) -> their places in grads.
void scatter_qkv_grads(const std::vector<float>& stacked, const BlockOffsets& o, int C, float* grads) {
  const std::int64_t CC = static_cast<std::int64_t>(C) * C;
  for (int k = 0; k < 3; ++k) {
    float* w = grads + o.wq + k * (CC + C);
    std::copy(stacked.begin() + k * CC, stacked.begin() + (k + 1) * CC, w);
    std::copy(stacked.begin() + 3 * CC + k * C, stacked.begin() + 3 * CC + (k + 1) * C, w + CC);
  }
}

template <class T>
void size(std::vector<T>& v, std::int64_t n) {
  v.resize(static_cast<std::size_t>(n));
}

// Buffers for B sequences (keeps capacity: a step at an unchanged shape allocates nothing).
void shape_activations(const GptTrainConfig& c, int B, Activations& a) {
  const int T = c.context_length, C = c.emb_dim, H = c.n_heads, V = c.vocab_size, L = c.n_layers;
  const std::int64_t N = static_cast<std::int64_t>(B) * T, NC = N * C;
  a.B = B;
  a.T = T;
  size(a.inputs, N);
  size(a.targets, N);
  a.resid.resize(static_cast<std::size_t>(L + 1));
  for (auto& r : a.resid) size(r, NC);
  a.layers.resize(static_cast<std::size_t>(L));
  for (Activations::Layer& l : a.layers) {
    size(l.qkv, 3 * NC);
    size(l.att, static_cast<std::int64_t>(B) * H * T * T);
    size(l.merged, NC);
    if (c.attn_only) continue;
    for (auto* v : {&l.ln1, &l.mid, &l.ln2}) size(*v, NC);
    for (auto* v : {&l.ln1_mean, &l.ln1_rstd, &l.ln2_mean, &l.ln2_rstd}) size(*v, N);
    size(l.fc, 4 * NC);
    size(l.gelu, 4 * NC);
  }
  if (!c.attn_only) {
    size(a.lnf, NC);
    size(a.lnf_mean, N);
    size(a.lnf_rstd, N);
  }
  size(a.logits, N * V);
  size(a.probs, N * V);
  size(a.losses, N);
  size(a.proj, NC);
}

}  // namespace

// tokens (B, T + 1) -> mean loss. Steps: 1 embeddings, 2 per block: (norm1) → Q/K/V →
// attention → out_proj → residual, (norm2 → fc → GELU → fc2 → residual), 3 (final_norm) →
// out_head, 4 cross-entropy.
double forward(const GptTrainModel& m, std::span<const std::int32_t> tokens, int B, Activations& a) {
  const GptTrainConfig& c = m.config;
  const int T = c.context_length, C = c.emb_dim, H = c.n_heads, V = c.vocab_size;
  if (B < 1 || tokens.size() != static_cast<std::size_t>(B) * static_cast<std::size_t>(T + 1))
    throw std::invalid_argument("forward: tokens do not hold B sequences of context + 1 ids");
  const std::int64_t N = static_cast<std::int64_t>(B) * T, NC = N * C;
  const bool kernel = backend() != Backend::OpenBlas;  // read once: one step, one backend
  shape_activations(c, B, a);
  for (std::int64_t b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const std::int32_t id = tokens[static_cast<std::size_t>(b * (T + 1) + t)];
      const std::int32_t next = tokens[static_cast<std::size_t>(b * (T + 1) + t + 1)];
      if (id < 0 || id >= V || next < 0 || next >= V)
        throw std::invalid_argument("forward: a token id is outside [0, V)");
      a.inputs[static_cast<std::size_t>(b * T + t)] = id;
      a.targets[static_cast<std::size_t>(b * T + t)] = next;
    }
  const float* P = m.params.data();

  // 1. Embeddings.
  ops::encoder_forward(a.resid[0].data(), a.inputs.data(), P + m.tensor("tok_emb.weight").offset,
                       P + m.tensor("pos_emb.weight").offset, N, T, C);
  // 2. Blocks.
  for (int l = 0; l < c.n_layers; ++l) {
    Activations::Layer& L = a.layers[static_cast<std::size_t>(l)];
    const BlockOffsets o = block_offsets(m, l);
    const float* x = a.resid[static_cast<std::size_t>(l)].data();
    float* out = a.resid[static_cast<std::size_t>(l) + 1].data();
    const float* in = x;
    if (!c.attn_only) {
      ops::layernorm_forward(L.ln1.data(), L.ln1_mean.data(), L.ln1_rstd.data(), x, P + o.n1s, P + o.n1h, N, C);
      in = L.ln1.data();
    }
    const Qkv w = qkv_weights(P, o, C, a.stacked);
    ops::matmul_forward(L.qkv.data(), in, w.w, w.b, N, C, 3 * C, a.pack, kernel);
    ops::attention_forward(L.merged.data(), L.att.data(), L.qkv.data(), B, T, C, H, kernel);
    ops::matmul_forward(a.proj.data(), L.merged.data(), P + o.wo, P + o.bo, N, C, C, a.pack, kernel);
    if (c.attn_only) {
      ops::residual_forward(out, x, a.proj.data(), NC);
      continue;
    }
    ops::residual_forward(L.mid.data(), x, a.proj.data(), NC);
    ops::layernorm_forward(L.ln2.data(), L.ln2_mean.data(), L.ln2_rstd.data(), L.mid.data(), P + o.n2s, P + o.n2h, N,
                           C);
    ops::matmul_forward(L.fc.data(), L.ln2.data(), P + o.w1, P + o.b1, N, C, 4 * C, a.pack, kernel);
    ops::gelu_forward(L.gelu.data(), L.fc.data(), 4 * NC);
    ops::matmul_forward(a.proj.data(), L.gelu.data(), P + o.w2, P + o.b2, N, 4 * C, C, a.pack, kernel);
    ops::residual_forward(out, L.mid.data(), a.proj.data(), NC);
  }
  // 3. Final norm (full) and the LM head.
  const float* h = a.resid.back().data();
  if (!c.attn_only) {
    ops::layernorm_forward(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), h,
                           P + m.tensor("final_norm.scale").offset, P + m.tensor("final_norm.shift").offset, N, C);
    h = a.lnf.data();
  }
  ops::matmul_forward(a.logits.data(), h, P + m.tensor("out_head.weight").offset, nullptr, N, C, V, a.pack, kernel);
  // 4. Cross-entropy.
  ops::crossentropy_forward(a.losses.data(), a.probs.data(), a.logits.data(), a.targets.data(), N, V);
  double sum = 0;
  for (float x : a.losses) sum += x;
  return sum / static_cast<double>(N);
}

// The forward's steps in reverse; a.dresid carries ∂loss/∂(residual stream) down the blocks.
void backward(const GptTrainModel& m, Activations& a, std::span<float> grads, std::int64_t positions) {
  const GptTrainConfig& c = m.config;
  const int B = a.B, T = a.T, C = c.emb_dim, H = c.n_heads, V = c.vocab_size;
  if (grads.size() != m.params.size()) throw std::invalid_argument("backward: grads do not match the parameters");
  const std::int64_t N = static_cast<std::int64_t>(B) * T, NC = N * C;
  const bool kernel = backend() != Backend::OpenBlas;
  const float* P = m.params.data();
  float* G = grads.data();
  size(a.dresid, NC);
  size(a.dstage, c.attn_only ? NC : 4 * NC);
  size(a.dinput, NC);
  size(a.dqkv, 3 * NC);

  // 4-3. Cross-entropy of the mean (each position weighs 1/N), out_head, final norm.
  float* dlogits = a.logits.data();
  ops::crossentropy_backward(dlogits, a.probs.data(), a.targets.data(),
                             1.0f / static_cast<float>(positions > 0 ? positions : N), N, V);
  const std::int64_t head = m.tensor("out_head.weight").offset;
  if (c.attn_only) {
    ops::matmul_backward(a.dresid.data(), G + head, nullptr, dlogits, a.resid.back().data(), P + head, N, C, V, a.trans,
                         kernel);
  } else {
    ops::matmul_backward(a.dstage.data(), G + head, nullptr, dlogits, a.lnf.data(), P + head, N, C, V, a.trans, kernel);
    std::fill(a.dresid.begin(), a.dresid.end(), 0.0f);
    const std::int64_t s = m.tensor("final_norm.scale").offset, sh = m.tensor("final_norm.shift").offset;
    ops::layernorm_backward(a.dresid.data(), G + s, G + sh, a.dstage.data(), a.resid.back().data(), P + s,
                            a.lnf_mean.data(), a.lnf_rstd.data(), N, C);
  }
  // 2. Blocks, last first.
  for (int l = c.n_layers - 1; l >= 0; --l) {
    Activations::Layer& L = a.layers[static_cast<std::size_t>(l)];
    const BlockOffsets o = block_offsets(m, l);
    const float* x = a.resid[static_cast<std::size_t>(l)].data();
    if (!c.attn_only) {
      // out = mid + fc2(GELU(fc(norm2(mid)))): dresid becomes ∂loss/∂mid.
      ops::matmul_backward(a.dstage.data(), G + o.w2, G + o.b2, a.dresid.data(), L.gelu.data(), P + o.w2, N, 4 * C, C,
                           a.trans, kernel);
      ops::gelu_backward(a.dstage.data(), L.fc.data(), a.dstage.data(), 4 * NC);
      ops::matmul_backward(a.dinput.data(), G + o.w1, G + o.b1, a.dstage.data(), L.ln2.data(), P + o.w1, N, C, 4 * C,
                           a.trans, kernel);
      ops::layernorm_backward(a.dresid.data(), G + o.n2s, G + o.n2h, a.dinput.data(), L.mid.data(), P + o.n2s,
                              L.ln2_mean.data(), L.ln2_rstd.data(), N, C);
    }
    // mid = x + out_proj(attention(qkv(in))), in = x or norm1(x): dresid becomes ∂loss/∂x.
    ops::matmul_backward(a.dstage.data(), G + o.wo, G + o.bo, a.dresid.data(), L.merged.data(), P + o.wo, N, C, C,
                         a.trans, kernel);
    ops::attention_backward(a.dqkv.data(), a.dstage.data(), L.qkv.data(), L.att.data(), B, T, C, H, kernel);
    const Qkv w = qkv_weights(P, o, C, a.stacked);
    const float* in = c.attn_only ? x : L.ln1.data();
    if (w.b) {
      // Gradients into the stack's layout, then to their tensors.
      std::vector<float> stacked_grads(a.stacked.size());
      const std::int64_t CC = static_cast<std::int64_t>(C) * C;
      ops::matmul_backward(a.dinput.data(), stacked_grads.data(), stacked_grads.data() + 3 * CC, a.dqkv.data(), in, w.w,
                           N, C, 3 * C, a.trans, kernel);
      scatter_qkv_grads(stacked_grads, o, C, G);
    } else {
      ops::matmul_backward(a.dinput.data(), G + o.wq, nullptr, a.dqkv.data(), in, w.w, N, C, 3 * C, a.trans, kernel);
    }
    if (c.attn_only)
      ops::accumulate(a.dresid.data(), a.dinput.data(), NC);
    else
      ops::layernorm_backward(a.dresid.data(), G + o.n1s, G + o.n1h, a.dinput.data(), x, P + o.n1s, L.ln1_mean.data(),
                              L.ln1_rstd.data(), N, C);
  }
  // 1. Embeddings.
  ops::encoder_backward(G + m.tensor("tok_emb.weight").offset, G + m.tensor("pos_emb.weight").offset, a.dresid.data(),
                        a.inputs.data(), N, T, C, V);
}

double loss_and_gradients(const GptTrainModel& m, std::span<const std::int32_t> tokens, int B, StepWorkspace& ws,
                          std::span<float> grads) {
  const int T = m.config.context_length;
  const int first = (B + 1) / 2, shards = B > 1 ? 2 : 1;
  const std::int64_t positions = static_cast<std::int64_t>(B) * T;
  const std::size_t per_sequence = static_cast<std::size_t>(T + 1);
  if (tokens.size() != static_cast<std::size_t>(B) * per_sequence)
    throw std::invalid_argument("loss_and_gradients: tokens do not hold B sequences of context + 1 ids");
  ws.shard_grads.resize(m.params.size());
  // One item per shard, each about a whole step's work: the pool gives the second its thread.
  detail::parallel_for(shards, std::int64_t{1} << 40, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) {
      const int b0 = s == 0 ? 0 : first, b1 = s == 0 ? (shards == 1 ? B : first) : B;
      Activations& a = ws.shards[s];
      forward(m, tokens.subspan(b0 * per_sequence, (b1 - b0) * per_sequence), b1 - b0, a);
      backward(m, a, s == 0 ? grads : std::span<float>(ws.shard_grads), positions);
    }
  });
  ws.losses.resize(static_cast<std::size_t>(positions));
  std::copy(ws.shards[0].losses.begin(), ws.shards[0].losses.end(), ws.losses.begin());
  if (shards == 2) {
    std::copy(ws.shards[1].losses.begin(), ws.shards[1].losses.end(), ws.losses.begin() + first * T);
    for (std::size_t i = 0; i < grads.size(); ++i) grads[i] += ws.shard_grads[i];
  }
  // The mean of every position's loss in batch order (as forward sums them), not of the
  // shards' means: the same number whatever the split.
  double sum = 0;
  for (float x : ws.losses) sum += x;
  return sum / static_cast<double>(positions);
}

}  // namespace mhaviz::train
