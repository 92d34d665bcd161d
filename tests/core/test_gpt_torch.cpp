// The trained-GPT forward against torch: every checkpoint tests/models/make_checkpoints.py
// writes (both layouts, F32/F16/BF16, tied and untied heads, qkv bias or not, eps, prefix)
// carries reference/expected.safetensors from a plain torch forward of the same weights.
// Every layer's attention weights and the logits are compared on every backend the CPU
// runs, fresh and after an edit, with the largest difference printed per tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpt_test_util.hpp"
#include "json_file.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/safetensors.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::kGptModels;

using test::read_json;

// Largest |a - b| over two equally long arrays; fails the test on a length mismatch.
float max_diff(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  EXPECT_EQ(a.size(), b.size()) << what;
  float m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// Every tensor of expected.safetensors against the trace; returns the largest difference.
void expect_matches_torch(const GptModel& model, const GptTrace& tr, const SafetensorsFile& expected,
                          const std::string& label) {
  const int L = model.config.n_layer, T = tr.tokens(), V = model.config.vocab_size;
  for (int l = 0; l < L; ++l) {
    const std::string name = "layers." + std::to_string(l) + ".attn_weights";
    const StTensor* t = expected.find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape, (std::vector<std::int64_t>{1, model.config.n_head, T, T})) << name;
    const float d =
        max_diff(tr.layers[static_cast<std::size_t>(l)].weights.data, expected.read(*t), label + " " + name);
    std::printf("%-40s %-28s max |mhaviz - torch| = %.3g\n", label.c_str(), name.c_str(), static_cast<double>(d));
    EXPECT_LT(d, 2e-6f) << label << " " << name;
  }
  // Logits at every position (the LM head on final_norm's rows) and at the last one.
  const std::vector<float> want = expected.read(*expected.find("logits"));
  ASSERT_EQ(want.size(), static_cast<std::size_t>(T) * static_cast<std::size_t>(V));
  float worst = 0, scale = 0;
  for (int pos = 0; pos < T; ++pos) {
    const std::vector<float> got = gpt_logits(model, tr, pos);
    const std::vector<float> row(want.begin() + pos * V, want.begin() + (pos + 1) * V);
    worst = std::max(worst, max_diff(got, row, label + " logits"));
    for (const float x : row) scale = std::max(scale, std::fabs(x));
  }
  const float last =
      max_diff(tr.logits_last.data, expected.read(*expected.find("logits_last")), label + " logits_last");
  std::printf("%-40s %-28s max |mhaviz - torch| = %.3g (|logits| up to %.3g)\n", label.c_str(), "logits, logits_last",
              static_cast<double>(std::max(worst, last)), static_cast<double>(scale));
  EXPECT_LT(worst, 1e-5f * std::max(1.0f, scale)) << label;
  EXPECT_LT(last, 1e-5f * std::max(1.0f, scale)) << label;
}

class GptTorch : public test::BackendTest {};

TEST_P(GptTorch, EveryCheckpointMatchesTorchFreshAndAfterAnEdit) {
  const json manifest = read_json(kGptModels / "manifest.json");
  ASSERT_GE(manifest["checkpoints"].size(), 7u);
  for (const json& c : manifest["checkpoints"]) {
    const std::string name = c["name"];
    GptModel model = load_gpt(kGptModels / name);
    prepare_gpt_forward(model);
    const std::vector<int> ids = read_json(kGptModels / name / "reference" / "input.json")["token_ids"];
    const SafetensorsFile expected = SafetensorsFile::open(kGptModels / name / "reference" / "expected.safetensors");
    const std::string label = std::string(GetParam()) + " " + name;
    GptTrace tr = gpt_forward(model, ids);
    expect_matches_torch(model, tr, expected, label);

    // Through an edit: other ids from the middle on, then the reference ids back. Rows before
    // the edit are kept, the rest recomputed: the result must still be torch's.
    std::vector<int> other = ids;
    for (std::size_t i = ids.size() / 2; i < ids.size(); ++i) other[i] = (ids[i] + 7) % model.config.vocab_size;
    gpt_forward(model, other, tr);
    gpt_forward(model, ids, tr);
    const int edit = static_cast<int>(ids.size() / 2);
    EXPECT_EQ(tr.recomputed_from, backend() == Backend::OpenBlas ? edit / kBlasRows * kBlasRows : edit) << label;
    expect_matches_torch(model, tr, expected, label + " (edited back)");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GptTorch, ::testing::ValuesIn(test::kBackendNames));

}  // namespace
}  // namespace mhaviz
