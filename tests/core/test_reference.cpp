// The five reference sessions against the tensors PyTorch 1.13 computed for them.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"

namespace mhaviz {
namespace {

using nlohmann::json;

class Reference : public ::testing::TestWithParam<std::string> {};

const Tensor* find(const std::vector<NamedTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t.tensor;
  return nullptr;
}

void expect_matches(const std::vector<NamedTensor>& ours, const json& expected, const std::string& label) {
  for (auto it = expected.begin(); it != expected.end(); ++it) {
    const std::string& name = it.key();
    const Tensor* t = find(ours, name);
    ASSERT_NE(t, nullptr) << label << ": no tensor named " << name;
    ASSERT_EQ(t->shape, it.value()["shape"].get<Shape>()) << label << ": shape of " << name;
    const auto want = it.value()["data"].get<std::vector<double>>();
    ASSERT_EQ(t->data.size(), want.size());
    const bool parameter = name.find(".weight") != std::string::npos || name.find(".bias") != std::string::npos;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double got = t->data[i];
      const double tol = parameter ? 1e-6 * std::fabs(want[i]) : 2e-5 + 1e-4 * std::fabs(want[i]);
      ASSERT_NEAR(got, want[i], tol) << label << ": " << name << "[" << i << "]";
    }
  }
}

TEST_P(Reference, MatchesPyTorch) {
  const std::string name = GetParam();
  const Session s = parse_session(test::slurp(test::data_path("reference/sessions/" + name + ".json")));
  const json expected = json::parse(test::slurp(test::data_path("reference/expected/" + name + ".json")))["tensors"];
  const Model model = build_model(s.model, s.d_in());
  const Trace fast = forward(model, s.input_tensor());
  expect_matches(named_tensors(model, fast), expected, name + " (fast)");
  const Trace slow = forward_reference(model, s.input_tensor());
  expect_matches(named_tensors(model, slow), expected, name + " (oracle)");

  // Dropout zeroes exactly the entries PyTorch zeroed (a weight of 0 stays 0 either way).
  const auto w = expected["attn_weights"]["data"].get<std::vector<double>>();
  const auto wd = expected["attn_weights_dropped"]["data"].get<std::vector<double>>();
  const Tensor& ours = fast.weights_after_dropout();
  for (std::size_t i = 0; i < w.size(); ++i)
    if (w[i] != 0.0) {
      EXPECT_EQ(wd[i] == 0.0, ours.data[i] == 0.0f) << name << " dropout entry " << i;
    }
}

TEST_P(Reference, IsBuiltInLesson) {
  const std::string name = GetParam();
  ASSERT_TRUE(is_lesson(name));
  const Session from_file = parse_session(test::slurp(test::data_path("reference/sessions/" + name + ".json")));
  EXPECT_EQ(session_to_json(lesson(name)), session_to_json(from_file));
}

INSTANTIATE_TEST_SUITE_P(Sessions, Reference,
                         ::testing::Values("seed003-wrapper", "seed003-weight-split-6d", "book-weight-split-3d",
                                           "journey-dropout-half", "seed002-fused-qkv-encoder"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(Reference, SeedThreePrintsTheBooksFirstRow) {
  const Session s = lesson("seed003-wrapper");
  const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
  ASSERT_EQ(t.output.shape, (Shape{2, 6, 4}));
  const float row[4] = {-0.4519f, 0.2216f, 0.4772f, 0.1063f};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(t.output.at({1, 0, j}), row[j], 5e-5);
}

TEST(Reference, BookDropoutOfOnesFirstRow) {
  // torch.manual_seed(123); torch.nn.Dropout(0.5)(torch.ones(6, 6))[0] == [2, 2, 0, 2, 2, 0]
  std::mt19937 gen(123);
  const float expected[6] = {2, 2, 0, 2, 2, 0};
  for (int j = 0; j < 6; ++j) EXPECT_EQ((torch_uniform53(gen) < 0.5) ? 2.0f : 0.0f, expected[j]) << j;
}

TEST(Reference, GeneratorIsTorchsMersenneTwister) {
  // torch.manual_seed(123); torch.empty(3).uniform_(0, 1) -> 0.29611194, 0.51656228, 0.25167072
  std::mt19937 gen(123);
  EXPECT_NEAR(torch_uniform(gen, 0.0f, 1.0f), 0.29611194f, 1e-7);
  EXPECT_NEAR(torch_uniform(gen, 0.0f, 1.0f), 0.51656228f, 1e-7);
  EXPECT_NEAR(torch_uniform(gen, 0.0f, 1.0f), 0.25167072f, 1e-7);
}

}  // namespace
}  // namespace mhaviz
