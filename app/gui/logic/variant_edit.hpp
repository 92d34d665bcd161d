// Switching the module's variant: one edit for the Model panel's combo and the walkthrough's
// mode buttons, so both do the same thing (and the UI says what).
#pragma once

#include <string>
#include <vector>

#include "mhaviz/model.hpp"

namespace mhaviz::gui {

// What a switch of variant keeps (a setting, chosen where the variant is).
enum class VariantKeeps {
  // num_heads and head_dim: the same heads of the same width. The wrapper's d_out is one
  // head's width (each module projects to d_out); the split variants' is num_heads x head_dim.
  HeadDim,
  // d_out, as the book compares them: MultiHeadAttentionWrapper(d_out=2, num_heads=2) gives
  // 4 columns, MultiHeadAttention(d_out=2, num_heads=2) splits 2 columns into heads of 1.
  // num_heads stays when it divides d_out, else the nearest count that does.
  DOut,
};

// Trained weights fix the shapes: a config with weights is returned as is.
ModelConfig with_variant(const ModelConfig& c, Variant v, VariantKeeps keeps);

// A gqa session's K/V heads when the Model panel switches to it: two query heads per K/V head
// when num_heads is even, else one K/V head (multi-query).
int default_kv_heads(int num_heads);
// The K/V head counts gqa allows: the divisors of num_heads (1 is multi-query attention,
// num_heads is multi-head attention with extra steps).
std::vector<int> kv_head_choices(const ModelConfig& c);
// After d_out or num_heads changed: gqa's K/V heads to the largest divisor of num_heads at or
// below, and RoPE off when head_dim became odd. Returns what changed, for the status bar, or "".
std::string fit_variant_fields(ModelConfig& c);

// What with_variant keeps, said where the variant is chosen.
inline constexpr const char* kVariantSwitchNote =
    "Switching keeps num_heads and head_dim (the same heads: the wrapper's d_out is one head's width, "
    "the split variants' is num_heads x head_dim), or d_out as the book compares them "
    "(the setting under the variant).";

}  // namespace mhaviz::gui
