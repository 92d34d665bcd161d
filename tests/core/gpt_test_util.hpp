// GPT test helpers: models with random weights built in memory, and a fixture that runs a
// test once per backend (skipped where the build or the CPU lacks it).
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "mhaviz/backend.hpp"
#include "mhaviz/gpt.hpp"

namespace mhaviz::test {

// Every backend name any build may know; parse_backend tells which this one has.
inline const char* const kBackendNames[] = {"avx512", "avx2", "openblas"};

class BackendTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    Backend b{};
    if (!parse_backend(GetParam(), b)) GTEST_SKIP() << GetParam() << " is not a backend of this build";
    if (!set_backend(b)) GTEST_SKIP() << "this CPU cannot run " << GetParam();
  }
  void TearDown() override { set_backend(before_); }

 private:
  Backend before_ = backend();
};

// A GPT of config c with weights uniform in ±0.2 (LayerNorm scales around 1), the book's
// untied head unless tied; unprepared (weights in `weight`).
inline GptModel random_gpt(const GptConfig& c, bool tied, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-0.2f, 0.2f), scale(0.8f, 1.2f);
  auto fill = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(gen);
    return v;
  };
  auto linear = [&](const char* name, int in, int out, bool bias) {
    Linear l;
    l.name = name;
    l.in = in;
    l.out = out;
    l.weight = fill(static_cast<std::size_t>(in) * static_cast<std::size_t>(out));
    if (bias) l.bias = fill(static_cast<std::size_t>(out));
    return l;
  };
  auto ln = [&](std::vector<float>& w, std::vector<float>& b) {
    w.resize(static_cast<std::size_t>(c.n_embd));
    for (float& x : w) x = scale(gen);
    b = fill(static_cast<std::size_t>(c.n_embd));
  };
  const int C = c.n_embd;
  GptModel m;
  m.config = c;
  m.layout = tied ? GptLayout::HuggingFace : GptLayout::Book;
  m.wte = fill(static_cast<std::size_t>(c.vocab_size) * C);
  m.wpe = fill(static_cast<std::size_t>(c.n_ctx) * C);
  for (int l = 0; l < c.n_layer; ++l) {
    GptBlock b;
    ln(b.ln1_weight, b.ln1_bias);
    b.qkv = linear("qkv", C, 3 * C, c.qkv_bias);
    b.proj = linear("proj", C, C, true);
    ln(b.ln2_weight, b.ln2_bias);
    b.fc = linear("fc", C, 4 * C, true);
    b.fc_proj = linear("fc_proj", 4 * C, C, true);
    m.blocks.push_back(std::move(b));
  }
  ln(m.lnf_weight, m.lnf_bias);
  if (!tied) m.lm_head = linear("lm_head", C, c.vocab_size, false);
  return m;
}

}  // namespace mhaviz::test
