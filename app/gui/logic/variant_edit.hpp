// Switching the module's variant: one edit for the Model panel's combo and the walkthrough's
// mode buttons, so both do the same thing (and the UI says what).
#pragma once

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

// What with_variant keeps, said where the variant is chosen.
inline constexpr const char* kVariantSwitchNote =
    "Switching keeps num_heads and head_dim (the same heads: the wrapper's d_out is one head's width, "
    "weight_split's and fused_qkv's is num_heads x head_dim), or d_out as the book compares them "
    "(the setting under the variant).";

}  // namespace mhaviz::gui
