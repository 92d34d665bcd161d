// What the model tests' files share: the folders tests/CMakeLists.txt gives their target
// (compile definitions; the test setup writes them into the build tree), and the worst
// difference of two tensors. One definition each: the test presets build each target's
// files as one unity source, where a constant defined in two of them would clash.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

namespace mhaviz::test {

#ifdef MHAVIZ_MODELS
inline const std::filesystem::path kGptModels = MHAVIZ_MODELS;  // make_checkpoints.py's GPTs
#endif
#ifdef MHAVIZ_MODERN
inline const std::filesystem::path kModernModels = MHAVIZ_MODERN;  // make_modern_checkpoints.py's
#endif
#ifdef MHAVIZ_GPT2_VOCAB
inline const std::filesystem::path kGpt2Vocab = MHAVIZ_GPT2_VOCAB;  // fetch_gpt2_vocab.sh's
#endif

// max |a[i] − b[i]|; a and b of one size (a failure otherwise).
inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace mhaviz::test
