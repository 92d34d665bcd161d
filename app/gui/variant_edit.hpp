// Switching the module's variant: one edit for the Model panel's combo and the walkthrough's
// mode buttons, so both do the same thing (and the UI says what).
#pragma once

#include "mhaviz/model.hpp"

namespace mhaviz::gui {

// Keeps num_heads and head_dim, so the same heads of the same width are shown: the wrapper's
// d_out is one head's width (each module projects to d_out), the split variants' d_out is
// num_heads x head_dim. Trained weights fix the shapes: a config with weights is returned as is.
ModelConfig with_variant(const ModelConfig& c, Variant v);

// What with_variant keeps, said where the variant is chosen.
inline constexpr const char* kVariantSwitchNote =
    "Switching keeps num_heads and head_dim: the wrapper's d_out is one head's width, "
    "weight_split's and fused_qkv's d_out is num_heads x head_dim.";

}  // namespace mhaviz::gui
