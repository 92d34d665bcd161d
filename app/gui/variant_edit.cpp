#include "variant_edit.hpp"

#include <algorithm>

namespace mhaviz::gui {

ModelConfig with_variant(const ModelConfig& c, Variant v) {
  if (c.weights || c.variant == v) return c;
  ModelConfig out = c;
  const int heads = std::max(1, c.num_heads);
  const int head_dim = c.variant == Variant::Wrapper ? std::max(1, c.d_out) : std::max(1, c.d_out / heads);
  out.variant = v;
  out.num_heads = heads;
  out.d_out = v == Variant::Wrapper ? head_dim : heads * head_dim;
  return out;
}

}  // namespace mhaviz::gui
