// The trainer's slow oracle on parameters held in double (the tests perturb them for finite
// differences); train.hpp's loss_and_grads_reference is this on a float model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mhaviz/train.hpp"

namespace mhaviz::train {

// params (parameter_layout(c) order), tokens (B, T + 1) -> mean cross-entropy; grads, when not
// null, = ∂loss/∂params. Plain loops, everything in double.
double loss_and_grads_double(const GptTrainConfig& c, std::span<const double> params,
                             std::span<const std::int32_t> tokens, int B, std::vector<double>* grads);

}  // namespace mhaviz::train
