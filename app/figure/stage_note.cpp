#include "figure/stage_note.hpp"

namespace mhaviz::figure {

std::string unchanged_stage_note(Stage st, const ModelConfig& c) {
  if (st == Stage::Masked && !c.causal)
    return "Nothing changed: the causal mask is off, so no score is masked (the same as 1, raw scores).";
  if (st == Stage::Dropped && !c.training)
    return "Nothing changed: eval mode runs no dropout (the same as 4, the weights).";
  if (st == Stage::Dropped && c.dropout <= 0.0)
    return "Nothing changed: dropout p = 0 drops nothing (the same as 4, the weights).";
  return {};
}

}  // namespace mhaviz::figure
