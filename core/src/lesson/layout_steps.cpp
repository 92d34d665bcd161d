// The walkthrough's step list of a module and the texts of each step: names for command
// lines, titles, the PyTorch line and the shape as the seeds and the book's bonus classes
// write them (see layout.hpp for the table of steps and shapes).
#include <algorithm>
#include <string>

#include "mhaviz/layout.hpp"

namespace mhaviz::layout {

// [SECTION] Dims and the mistake
Dims dims_for(const ModelConfig& c, int b, int T, int d_in) {
  Dims d;
  d.variant = c.variant;
  d.b = b;
  d.T = T;
  d.d_in = d_in;
  d.h = c.num_heads;
  d.hd = head_dim(c);
  d.G = c.variant == Variant::Gqa ? kv_heads(c) : 0;
  d.window = c.sliding_window;
  d.causal = c.causal;
  d.qk_norm = c.qk_norm;
  d.rope = c.rope_base != 0.0;
  d.latent = c.variant == Variant::Mla ? c.latent_dim : 0;
  d.out = c.out_dim;
  d.query_scalar = c.query_pre_attn_scalar;
  return d;
}

MistakeKind mistake_kind(const Dims& d) {
  switch (d.variant) {
    case Variant::Wrapper: return MistakeKind::None;
    case Variant::Gqa: return MistakeKind::Repeat;
    default: return MistakeKind::Merge;
  }
}

int kv_head_read(const Dims& d, int h, bool repeat_mistake) { return repeat_mistake ? h % d.kv() : h / d.group(); }

int first_part(Step s, const Dims& d) {
  const bool kv_panes = s == Step::Project || s == Step::View || s == Step::Transpose;
  return d.variant == Variant::Gqa && kv_panes ? 1 : 0;
}

// [SECTION] Names
namespace {
struct StepText {
  Step step;
  const char* name;
};
constexpr StepText kNames[] = {
    {Step::Input, "input"},
    {Step::Project, "project"},
    {Step::View, "view"},
    {Step::Transpose, "transpose"},
    {Step::Chunk, "chunk"},
    {Step::Scores, "scores"},
    {Step::Mask, "mask"},
    {Step::Softmax, "softmax"},
    {Step::Dropout, "dropout"},
    {Step::Context, "context"},
    {Step::TransposeBack, "transpose_back"},
    {Step::Merge, "merge"},
    {Step::Concat, "concat"},
    {Step::OutProj, "out_proj"},
    {Step::Expand, "expand"},
    {Step::QkNorm, "qk_norm"},
    {Step::Rope, "rope"},
    {Step::Latent, "latent"},
};
}  // namespace

std::string_view step_name(Step s) {
  for (const auto& n : kNames)
    if (n.step == s) return n.name;
  return "?";
}

bool parse_step(std::string_view name, Step& out) {
  for (const auto& n : kNames) {
    if (name == n.name) {
      out = n.step;
      return true;
    }
  }
  return false;
}

// [SECTION] Titles, code, shapes
std::string step_title(Step s, const Dims& d) {
  const Variant v = d.variant;
  const bool wrapper = v == Variant::Wrapper, fused = v == Variant::FusedQkv, gqa = v == Variant::Gqa;
  switch (s) {
    case Step::Input: return "Input X";
    case Step::Project:
      if (wrapper) return "Each head projects: Q_i, K_i, V_i = X·W_iᵀ";
      if (fused) return "One projection: qkv = X·W_qkvᵀ";
      if (gqa) return "Q = X·W_queryᵀ; K, V = X·Wᵀ to " + std::to_string(d.kv()) + " K/V heads only";
      if (v == Variant::Mla) return "Q = X·W_queryᵀ; K, V up-projected from the latent: W_UK, W_UV";
      return "Q, K, V = X·Wᵀ";
    case Step::Latent: return "Down-project to the latent: what the KV cache keeps";
    case Step::View: return fused ? "Split into heads: reshape" : "Split into heads: view";
    case Step::Transpose: return fused ? "Group by head: permute" : "Group by head: transpose(1, 2)";
    case Step::Chunk: return "Split each head's chunk into q | k | v";
    case Step::Expand:
      return "Expand K, V to the query heads: each K/V head serves " + std::to_string(d.group()) + " query head" +
             (d.group() == 1 ? "" : "s");
    case Step::QkNorm: return "QK-norm: RMSNorm of every q and k vector over head_dim";
    case Step::Rope: return "RoPE: rotate q and k by their position";
    case Step::Scores: return d.rope ? "Scores q·kᵀ of the rotated q and k, per head" : "Scores q·kᵀ, per head";
    case Step::Mask:
      if (d.window > 0) return "Causal and sliding-window mask: hidden cells become -∞";
      return "Causal mask: future cells become -∞";
    case Step::Softmax:
      return d.query_scalar > 0 ? "Scale by query_pre_attn_scalar^−0.5 and softmax"
                                : "Scale by 1/√head_dim and softmax";
    case Step::Dropout: return "Dropout";
    case Step::Context: return "Context = weights·v";
    case Step::TransposeBack: return "Transpose back: group by token";
    case Step::Merge: return "Merge heads";
    case Step::Concat: return "Concatenate the heads";
    case Step::OutProj: return fused ? "Output projection (linear_layer)" : "Output projection (out_proj)";
  }
  return "?";
}

std::string step_code(Step s, const Dims& d, int batch) {
  const Variant v = d.variant;
  const bool wrapper = v == Variant::Wrapper, fused = v == Variant::FusedQkv, gqa = v == Variant::Gqa;
  switch (s) {
    case Step::Input:
      // The seeds stack two copies; the line says what this input holds.
      if (batch <= 1) return "x = inputs.unsqueeze(0)   # a batch of one";
      if (batch <= 3)
        return batch == 2 ? "x = torch.stack((inputs, inputs), dim=0)"
                          : "x = torch.stack((inputs, inputs, inputs), dim=0)";
      return "x = torch.stack([inputs] * " + std::to_string(batch) + ", dim=0)";
    case Step::Project:
      if (wrapper) return "queries = self.W_query(x)   # in every head: [head(x) for head in self.heads]";
      if (fused) return "qkv = self.qkv_layer(x)";
      if (gqa) return "keys = self.W_key(x); values = self.W_value(x)   # d_in -> num_kv_groups * head_dim";
      if (v == Variant::Mla) return "queries = self.W_query(x); keys = self.W_UK(latent); values = self.W_UV(latent)";
      return "queries = self.W_query(x); keys = self.W_key(x); values = self.W_value(x)";
    case Step::View:
      if (fused) return "qkv = qkv.reshape(b, num_tokens, num_heads, 3 * head_dim)";
      if (gqa) return "keys = keys.view(b, num_tokens, self.num_kv_groups, self.head_dim)";
      return "queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)";
    case Step::Transpose:
      if (fused) return "qkv = qkv.permute(0, 2, 1, 3)";
      return gqa ? "keys = keys.transpose(1, 2)" : "queries = queries.transpose(1, 2)";
    case Step::Chunk: return "q, k, v = qkv.chunk(3, dim=-1)";
    case Step::Expand:
      return "keys = keys.repeat_interleave(self.group_size, dim=1)   # group_size = num_heads // num_kv_groups";
    case Step::QkNorm:
      return "queries = self.q_norm(queries); keys = self.k_norm(keys)   # RMSNorm(head_dim, eps=1e-6)";
    case Step::Rope: return "queries = apply_rope(queries, cos, sin); keys = apply_rope(keys, cos, sin)";
    case Step::Latent: return "latent = self.W_DKV(x)   # d_in -> latent_dim";
    case Step::Scores:
      return wrapper ? "attn_scores = queries @ keys.transpose(1, 2)" : "attn_scores = queries @ keys.transpose(2, 3)";
    case Step::Mask:
      if (d.window > 0)
        return "mask_bool = (diff < 0) | (diff >= W)   # diff = i - j;  attn_scores.masked_fill_(mask_bool, "
               "-torch.inf)";
      return "attn_scores.masked_fill_(mask_bool, -torch.inf)";
    case Step::Softmax:
      if (d.query_scalar > 0) return "attn_weights = torch.softmax(attn_scores * query_pre_attn_scalar**-0.5, dim=-1)";
      return "attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)";
    case Step::Dropout: return "attn_weights = self.dropout(attn_weights)";
    case Step::Context: return "context_vec = attn_weights @ values";
    case Step::TransposeBack: return "context_vec = context_vec.transpose(1, 2)";
    case Step::Merge: return "context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)";
    case Step::Concat: return "torch.cat([head(x) for head in self.heads], dim=-1)";
    case Step::OutProj: return fused ? "out = self.linear_layer(values)" : "context_vec = self.out_proj(context_vec)";
  }
  return "";
}

std::string_view step_shape(Step s, const Dims& d) {
  const Variant v = d.variant;
  const bool wrapper = v == Variant::Wrapper, fused = v == Variant::FusedQkv, gqa = v == Variant::Gqa;
  switch (s) {
    case Step::Input: return "(b, num_tokens, d_in)";
    case Step::Project:
      if (wrapper) return "num_heads x (b, num_tokens, d_out)";
      if (fused) return "(b, num_tokens, 3 * d_model)";
      return gqa ? "(b, num_tokens, num_kv_groups * head_dim)" : "(b, num_tokens, d_out)";
    case Step::View:
      if (gqa) return "(b, num_tokens, num_kv_groups, head_dim)";
      return fused ? "(b, num_tokens, num_heads, 3 * head_dim)" : "(b, num_tokens, num_heads, head_dim)";
    case Step::Transpose:
      if (gqa) return "(b, num_kv_groups, num_tokens, head_dim)";
      return fused ? "(b, num_heads, num_tokens, 3 * head_dim)" : "(b, num_heads, num_tokens, head_dim)";
    case Step::Chunk:
    case Step::Expand:
    case Step::QkNorm:
    case Step::Rope: return "(b, num_heads, num_tokens, head_dim)";
    case Step::Latent: return "(b, num_tokens, latent_dim)";
    case Step::Scores:
    case Step::Mask:
    case Step::Softmax:
    case Step::Dropout:
      return wrapper ? "num_heads x (b, num_tokens, num_tokens)" : "(b, num_heads, num_tokens, num_tokens)";
    case Step::Context: return wrapper ? "num_heads x (b, num_tokens, d_out)" : "(b, num_heads, num_tokens, head_dim)";
    case Step::TransposeBack: return "(b, num_tokens, num_heads, head_dim)";
    case Step::Merge: return "(b, num_tokens, d_out)";
    case Step::Concat: return "(b, num_tokens, num_heads * d_out)";
    case Step::OutProj: return d.out > 0 ? "(b, num_tokens, out_dim)" : "(b, num_tokens, d_out)";
  }
  return "";
}

// [SECTION] The step list
namespace {
// The module's steps without its options: chapter 3's, and gqa's expansion.
std::vector<Step> base_steps(const Dims& d, bool mistaken) {
  using S = Step;
  switch (d.variant) {
    case Variant::Wrapper:
      return {S::Input, S::Project, S::Scores, S::Mask, S::Softmax, S::Dropout, S::Context, S::Concat};
    case Variant::Gqa:  // its mistake (.repeat) changes what the expansion and the scores hold, not the steps
      return {S::Input,   S::Project, S::View,    S::Transpose,     S::Expand, S::Scores, S::Mask,
              S::Softmax, S::Dropout, S::Context, S::TransposeBack, S::Merge,  S::OutProj};
    case Variant::WeightSplit:
    case Variant::Mla:  // its latent comes first (steps_for)
      if (mistaken)
        return {S::Input,   S::Project, S::View,    S::Transpose, S::Scores, S::Mask,
                S::Softmax, S::Dropout, S::Context, S::Merge,     S::OutProj};
      return {S::Input,   S::Project, S::View,    S::Transpose,     S::Scores, S::Mask,
              S::Softmax, S::Dropout, S::Context, S::TransposeBack, S::Merge,  S::OutProj};
    case Variant::FusedQkv:
      if (mistaken)
        return {S::Input, S::Project, S::View,    S::Transpose, S::Chunk, S::Scores,
                S::Mask,  S::Softmax, S::Dropout, S::Context,   S::Merge, S::OutProj};
      return {S::Input,   S::Project, S::View,    S::Transpose,     S::Chunk, S::Scores, S::Mask,
              S::Softmax, S::Dropout, S::Context, S::TransposeBack, S::Merge, S::OutProj};
  }
  return {};
}
}  // namespace

std::vector<Step> steps_for(const Dims& d, bool mistaken) {
  std::vector<Step> steps = base_steps(d, mistaken);
  if (d.variant == Variant::Mla) steps.insert(steps.begin() + 1, Step::Latent);  // x -> latent -> keys, values
  // QK-norm, then RoPE, on the per-head q and k: after the split (the fused chunk), before
  // gqa's expansion and the scores, as the forward computes them.
  const Step split = d.variant == Variant::FusedQkv ? Step::Chunk : Step::Transpose;
  auto at = std::find(steps.begin(), steps.end(), split);
  if (at == steps.end()) return steps;  // the wrapper: no option applies
  ++at;
  if (d.rope) at = steps.insert(at, Step::Rope);
  if (d.qk_norm) steps.insert(at, Step::QkNorm);
  return steps;
}

}  // namespace mhaviz::layout
