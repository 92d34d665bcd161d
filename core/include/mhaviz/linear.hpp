// nn.Linear's parameters, the one layer type every model in the core is made of (the
// chapter-3 module's projections, a trained GPT's blocks). Products with it: the kernels'
// linear_into (core/src/kernels/linear.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mhaviz {

// nn.Linear(in, out): weight [out, in] row-major, optional bias [out].
struct Linear {
  std::string name;  // state_dict prefix, e.g. "heads.0.W_query" or "out_proj"
  int in = 0;
  int out = 0;
  std::vector<float> weight;
  std::vector<float> bias;  // empty when the layer has no bias
  // weightᵀ in the kernel's panels, filled by prepare_forward (model.hpp) or
  // prepare_gpt_forward (gpt_forward.hpp) for the layers a forward multiplies by; where it is
  // empty the forward uses OpenBLAS for the layer. A prepared GPT may hold only this copy.
  std::vector<float> packed;
  // The same panels as bfloat16 bit patterns, for a layer whose checkpoint stores BF16 (a
  // Hugging Face model on the kernel): held instead of `packed` and `weight`, half their size.
  std::vector<std::uint16_t> packed_bf16;
};

}  // namespace mhaviz
