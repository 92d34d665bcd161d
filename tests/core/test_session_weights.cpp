// A session's model.weights: a chapter-3 module's trained parameters read from a safetensors
// file instead of the seed's init. The reference sessions' PyTorch tensors are the oracle: the
// parameters PyTorch drew for seed 123, saved to a file and loaded into a session whose seed is
// different, must give PyTorch's output exactly as the seed did.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "mhaviz/safetensors.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/trace.hpp"
#include "test_util.hpp"

namespace mhaviz {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("mhaviz-weights-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

struct Param {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

void write_params(const fs::path& file, const std::vector<Param>& params) {
  std::vector<StWriteTensor> t;
  for (const Param& p : params) t.push_back({p.name, p.shape, p.values.data()});
  write_safetensors_f32(file, t);
}

// The parameters PyTorch drew for a reference session, as its expected tensors hold them.
std::vector<Param> reference_params(const std::string& lesson, const Session& s) {
  const json expected = json::parse(test::slurp(test::data_path("reference/expected/" + lesson + ".json")))["tensors"];
  std::vector<Param> out;
  for (const ParameterSpec& p : parameter_specs(s.model, s.d_in())) {
    const json& t = expected.at(p.name);
    out.push_back({p.name, t["shape"].get<std::vector<std::int64_t>>(), t["data"].get<std::vector<float>>()});
  }
  return out;
}

std::string session_text(const std::string& lesson) { return test::slurp(test::data_path("reference/sessions/" + lesson + ".json")); }

// The session file with another seed and model.weights set (as written, relative or not).
std::string with_weights(const std::string& text, const std::string& weights, std::uint64_t seed = 999) {
  json j = json::parse(text);
  j["model"]["seed"] = seed;
  j["model"]["weights"] = weights;
  return j.dump(1);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SessionError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SessionWeights, PyTorchsParametersFromAFileGivePyTorchsOutputUnderAnotherSeed) {
  for (const std::string lesson : {"seed003-weight-split-6d", "seed003-wrapper", "seed002-fused-qkv-encoder"}) {
    SCOPED_TRACE(lesson);
    Dir dir;
    const Session seeded = parse_session(session_text(lesson));
    write_params(dir.path / "trained.safetensors", reference_params(lesson, seeded));
    const fs::path session_file = dir.path / "session.json";
    write_file_atomic(session_file.string(), with_weights(session_text(lesson), "trained.safetensors"));

    // Relative to the session file, not to the working directory.
    const Session s = load_session(session_file.string());
    ASSERT_TRUE(s.model.weights);
    EXPECT_EQ(s.model.weights->path, (dir.path / "trained.safetensors").lexically_normal().string());
    Session eval = s;
    eval.model.training = false;
    const Trace t = forward(build_model(eval.model, eval.d_in()), eval.input_tensor());
    const json expected = json::parse(test::slurp(test::data_path("reference/expected/" + lesson + ".json")))["tensors"];
    const auto want = expected["output"]["data"].get<std::vector<float>>();
    ASSERT_EQ(t.output.data.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.output.data[i], want[i], 2e-6f) << "output[" << i << "]";

    // Seed 999 without the file gives other numbers: the comparison above can tell them apart.
    Session unloaded = eval;
    unloaded.model.weights = nullptr;
    const Trace u = forward(build_model(unloaded.model, unloaded.d_in()), unloaded.input_tensor());
    EXPECT_GT(std::fabs(u.output.data[0] - want[0]), 1e-3f);
  }
}

TEST(SessionWeights, SavedSessionNamesTheFileByItsAbsolutePathAndLoadsAgain) {
  const std::string lesson = "seed003-weight-split-6d";
  Dir dir;
  write_params(dir.path / "w.safetensors", reference_params(lesson, parse_session(session_text(lesson))));
  const Session s = parse_session(with_weights(session_text(lesson), "w.safetensors"), dir.path);
  const std::string saved = session_to_json(s);
  EXPECT_EQ(json::parse(saved)["model"]["weights"], (dir.path / "w.safetensors").string());
  // The autosave lives elsewhere: reading it back from another folder finds the same file.
  const Session again = parse_session(saved, fs::temp_directory_path());
  ASSERT_TRUE(again.model.weights);
  EXPECT_EQ(again.model.weights->tensors.at("W_query.weight").values, s.model.weights->tensors.at("W_query.weight").values);
  EXPECT_EQ(session_to_json(again), saved);
}

TEST(SessionWeights, EveryWrongFileIsOneLineNamingTheProblem) {
  const std::string lesson = "seed003-weight-split-6d";  // weight_split, d_in 6, d_out 6, no qkv bias
  Dir dir;
  const std::vector<Param> good = reference_params(lesson, parse_session(session_text(lesson)));
  auto error_with = [&](const std::vector<Param>& params) {
    write_params(dir.path / "w.safetensors", params);
    return error_of([&] { parse_session(with_weights(session_text(lesson), "w.safetensors"), dir.path); });
  };
  std::vector<Param> missing(good.begin() + 1, good.end());
  EXPECT_NE(error_with(missing).find("model.weights: " + (dir.path / "w.safetensors").string() +
                                     ": no tensor W_query.weight [6, 6], which the weight_split module with d_in 6, d_out 6, 2 heads needs"),
            std::string::npos)
      << error_with(missing);
  std::vector<Param> misshaped = good;
  misshaped[1].shape = {4, 9};
  EXPECT_NE(error_with(misshaped).find("W_key.weight is [4, 9] but the weight_split module"), std::string::npos) << error_with(misshaped);
  std::vector<Param> extra = good;
  extra.push_back({"W_query.bias", {6}, std::vector<float>(6, 0.0f)});
  EXPECT_NE(error_with(extra).find("W_query.bias is not a parameter of the weight_split module"), std::string::npos) << error_with(extra);
  std::vector<Param> nan = good;
  nan[2].values[5] = std::nanf("");
  EXPECT_NE(error_with(nan).find("W_value.weight[5] is not a finite number"), std::string::npos) << error_with(nan);

  EXPECT_NE(error_of([&] { parse_session(with_weights(session_text(lesson), "absent.safetensors"), dir.path); })
                .find("model.weights: "),
            std::string::npos);
  json j = json::parse(session_text(lesson));
  j["model"]["weights"] = 3;
  EXPECT_EQ(error_of([&] { parse_session(j.dump()); }), "model.weights: expected the path of a .safetensors file, got an integer 3");
  // Not a safetensors file at all: the reader's own message, behind the field.
  write_file_atomic((dir.path / "w.safetensors").string(), "{}");
  EXPECT_NE(error_of([&] { parse_session(with_weights(session_text(lesson), "w.safetensors"), dir.path); })
                .find("w.safetensors: truncated"),
            std::string::npos)
      << error_of([&] { parse_session(with_weights(session_text(lesson), "w.safetensors"), dir.path); });
}

TEST(SessionWeights, AConfigTheFileDoesNotFitIsRefusedWhenEdited) {
  const std::string lesson = "seed003-weight-split-6d";
  Dir dir;
  write_params(dir.path / "w.safetensors", reference_params(lesson, parse_session(session_text(lesson))));
  Session s = parse_session(with_weights(session_text(lesson), "w.safetensors"), dir.path);
  s.model.num_heads = 3;  // same shapes: still fits
  EXPECT_NO_THROW(validate_session(s));
  s.model.d_out = 3;
  EXPECT_NE(error_of([&] { validate_session(s); }).find("W_query.weight is [6, 6] but the weight_split module with d_in 6, d_out 3"),
            std::string::npos);
  s.model.d_out = 6;
  s.model.qkv_bias = true;
  EXPECT_NE(error_of([&] { validate_session(s); }).find("no tensor W_query.bias [6]"), std::string::npos);
}

}  // namespace
}  // namespace mhaviz
