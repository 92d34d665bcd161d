// A stage that changes nothing says so (issue 13): "Masked" without the causal mask and
// "Weights after dropout" in eval mode or at p = 0 show the same numbers as the stage
// before them, which the lesson figure writes under the stage's title.
#pragma once

#include <string>

#include "mhaviz/model.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz::figure {

// Empty when the stage changes the values for this config; otherwise one sentence naming
// the reason and the stage whose numbers are shown again.
std::string unchanged_stage_note(Stage st, const ModelConfig& c);

}  // namespace mhaviz::figure
