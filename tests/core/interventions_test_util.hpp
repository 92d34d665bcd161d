// What the GPT and the Qwen/Llama/Gemma intervention tests share: reading a tensor of the
// torch reference and the printed, relative comparison with it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mhaviz/safetensors.hpp"

namespace mhaviz::test {

inline std::vector<float> expected_tensor(const SafetensorsFile& f, const std::string& name) {
  const StTensor* t = f.find(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? f.read(*t) : std::vector<float>{};
}

// Largest |got - want| relative to max(1, |want|'s largest); prints it.
inline float rel_diff(const std::vector<float>& got, const std::vector<float>& ref, const std::string& label) {
  EXPECT_EQ(got.size(), ref.size()) << label;
  float worst = 0, scale = 1;
  for (std::size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    worst = std::max(worst, std::fabs(got[i] - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  std::printf("%-44s max |mhaviz - torch| = %.3g (scale %.3g)\n", label.c_str(), static_cast<double>(worst),
              static_cast<double>(scale));
  return worst / scale;
}

}  // namespace mhaviz::test
