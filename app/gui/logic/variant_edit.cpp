#include "variant_edit.hpp"

#include <algorithm>
#include <cstdlib>

namespace mhaviz::gui {

ModelConfig with_variant(const ModelConfig& c, Variant v, VariantKeeps keeps) {
  if (c.weights || c.variant == v) return c;
  ModelConfig out = c;
  const int heads = std::max(1, c.num_heads);
  out.variant = v;
  out.num_heads = heads;
  // The fields of one variant go with it (a gqa session's K/V heads, mla's latent); the
  // wrapper has no window and no QK-norm (each CausalAttention is the chapter's), and neither
  // it nor mla (whose real models rotate a decoupled key part) has RoPE here.
  if (v != Variant::Gqa) out.num_kv_groups = 0;
  if (v != Variant::Mla) out.latent_dim = 0;
  if (v == Variant::Wrapper) {
    out.sliding_window = 0;
    out.qk_norm = false;
  }
  if (v == Variant::Wrapper || v == Variant::Mla) out.rope_base = 0.0;
  if (keeps == VariantKeeps::DOut) {
    out.d_out = std::max(1, c.d_out);
    // A split variant needs num_heads to divide d_out: the nearest count that does.
    if (v != Variant::Wrapper && out.d_out % heads != 0) {
      int best = 1;
      for (int h = 1; h <= out.d_out; ++h)
        if (out.d_out % h == 0 && std::abs(h - heads) < std::abs(best - heads)) best = h;
      out.num_heads = best;
    }
  } else {
    const int head_dim = c.variant == Variant::Wrapper ? std::max(1, c.d_out) : std::max(1, c.d_out / heads);
    out.d_out = v == Variant::Wrapper ? head_dim : heads * head_dim;
  }
  // RoPE rotates pairs: a head_dim made odd by the switch leaves it off.
  if (out.rope_base != 0.0 && (out.d_out / out.num_heads) % 2 != 0) out.rope_base = 0.0;
  // A new gqa or mla session starts from the teaching defaults.
  if (v == Variant::Gqa) out.num_kv_groups = default_kv_heads(out.num_heads);
  if (v == Variant::Mla) out.latent_dim = default_latent_dim(out.d_out);
  return out;
}

int default_kv_heads(int num_heads) { return num_heads % 2 == 0 ? num_heads / 2 : 1; }

std::vector<int> kv_head_choices(const ModelConfig& c) {
  std::vector<int> out;
  for (int g = 1; g <= std::max(1, c.num_heads); ++g)
    if (c.num_heads % g == 0) out.push_back(g);
  return out;
}

std::string fit_variant_fields(ModelConfig& c) {
  std::string said;
  if (c.variant == Variant::Gqa && c.num_heads > 0 &&
      (c.num_kv_groups < 1 || c.num_kv_groups > c.num_heads || c.num_heads % c.num_kv_groups != 0)) {
    int g = std::clamp(c.num_kv_groups, 1, c.num_heads);
    while (c.num_heads % g != 0) --g;  // the largest divisor below: ends at 1
    said = "K/V heads " + std::to_string(c.num_kv_groups) + " -> " + std::to_string(g) + " (a divisor of num_heads " +
           std::to_string(c.num_heads) + ")";
    c.num_kv_groups = g;
  }
  if (c.rope_base != 0.0 && c.num_heads > 0 && c.d_out % c.num_heads == 0 && (c.d_out / c.num_heads) % 2 != 0) {
    if (!said.empty()) said += "; ";
    said += "RoPE off: head_dim " + std::to_string(c.d_out / c.num_heads) + " is odd (RoPE rotates pairs)";
    c.rope_base = 0.0;
  }
  return said;
}

}  // namespace mhaviz::gui
