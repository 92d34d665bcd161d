// The files of a Hugging Face checkpoint folder other than the tokenizer: config.json
// (hf_config.hpp) and the weights, single-file or sharded (hf_weights.hpp), on the torch-made
// checkpoints of tests/models/make_modern_checkpoints.py (in MHAVIZ_MODERN), their float64
// reference outputs, and every broken input of its catalogue; then config.json forms the
// checkpoints do not use (nested text_config, rope_parameters, defaults).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "json_file.hpp"
#include "load_error_util.hpp"
#include "mhaviz/hf_config.hpp"
#include "mhaviz/hf_weights.hpp"
#include "mhaviz/tokenizer.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::kModernModels;

using test::read_json;

std::string error_of(const std::function<void()>& f) { return test::load_error_of(f); }

const json& manifest() {
  static const json j = read_json(kModernModels / "manifest.json");
  return j;
}

class Checkpoint : public ::testing::TestWithParam<std::string> {
 protected:
  json entry() const {
    for (const json& c : manifest()["checkpoints"])
      if (c["name"] == GetParam()) return c;
    ADD_FAILURE() << "not in the manifest: " << GetParam();
    return {};
  }
  fs::path dir() const { return kModernModels / GetParam(); }
};

TEST_P(Checkpoint, ConfigGivesTheShapesTheReferenceUsed) {
  const json e = entry();
  const HfConfig c = read_hf_config(dir() / "config.json");
  EXPECT_EQ(c.model_type, e["model_type"]);
  EXPECT_EQ(c.num_hidden_layers, e["n_layers"].get<int>());
  EXPECT_EQ(c.num_attention_heads, e["n_heads"].get<int>());
  EXPECT_EQ(c.num_key_value_heads, e["n_kv_heads"].get<int>());
  EXPECT_EQ(c.head_dim, e["head_dim"].get<int>());
  EXPECT_EQ(c.tie_word_embeddings, e["tied"].get<bool>());
  EXPECT_EQ(c.sliding, e["sliding"].get<std::vector<bool>>());
  EXPECT_EQ(c.sliding_window, e["window"].get<int>());
  EXPECT_NEAR(c.score_scale(), e["scaling"].get<double>(), 1e-15);
  // The RoPE frequencies, scaled, equal the reference's (float64, stored as F32).
  const SafetensorsFile expected = SafetensorsFile::open(dir() / "reference" / "expected.safetensors");
  for (const auto& [name, rope] :
       {std::pair{"rope_global.inv_freq", c.rope}, std::pair{"rope_local.inv_freq", c.rope_local}}) {
    const std::vector<float> want = expected.read(*expected.find(name));
    const std::vector<double> got = rope.inv_freq(c.head_dim);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-7 * std::abs(want[i]) + 1e-30) << name << "[" << i << "]";
  }
}

TEST_P(Checkpoint, EveryTensorReadsAsTheFileStoresIt) {
  const json e = entry();
  const HfWeights w = HfWeights::open(dir());
  EXPECT_EQ(w.sharded(), e["sharded"].get<bool>());
  std::set<std::string> names;
  for (const auto& [name, t] : w.tensors()) names.insert(name);
  const auto listed = e["tensors"].get<std::vector<std::string>>();
  EXPECT_EQ(names, std::set<std::string>(listed.begin(), listed.end()));
  EXPECT_EQ(w.find("lm_head.weight") == nullptr, e["tied"].get<bool>());
  // Widened to float32, bit for bit what torch widened.
  const SafetensorsFile f32 = SafetensorsFile::open(dir() / "reference" / "weights_f32.safetensors");
  for (const StTensor& want : f32.tensors()) {
    const HfTensor& got = w.at(want.name);
    EXPECT_EQ(got.shape(), want.shape) << want.name;
    EXPECT_EQ(got.dtype(), e["dtype"] == "BF16"  ? StDtype::BF16
                           : e["dtype"] == "F16" ? StDtype::F16
                                                 : StDtype::F32)
        << want.name;
    EXPECT_EQ(got.bytes().size(), static_cast<std::size_t>(got.numel()) * dtype_size(got.dtype()));
    EXPECT_EQ(got.read(), f32.read(want)) << want.name;
  }
  EXPECT_NE(error_of([&] {
              w.at("model.layers.99.mlp.up_proj.weight");
            }).find("no tensor \"model.layers.99.mlp.up_proj.weight\""),
            std::string::npos);
}

TEST_P(Checkpoint, ReferenceAttentionIsCausalAndSlidesWhereTheConfigSays) {
  // The torch reference's weights hold the masks the config implies: none of a query's
  // weight beyond it, nor, on a sliding layer, window or more positions behind it.
  const HfConfig c = read_hf_config(dir() / "config.json");
  const SafetensorsFile expected = SafetensorsFile::open(dir() / "reference" / "expected.safetensors");
  const json& sequences = manifest()["sequences"];
  for (std::size_t s = 0; s < sequences.size(); ++s) {
    const int T = static_cast<int>(sequences[s].size());
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      const StTensor* t = expected.find("s" + std::to_string(s) + ".layers." + std::to_string(l) + ".attn_weights");
      ASSERT_NE(t, nullptr);
      ASSERT_EQ(t->shape, (std::vector<std::int64_t>{1, c.num_attention_heads, T, T}));
      const std::vector<float> w = expected.read(*t);
      const bool sliding = c.sliding[static_cast<std::size_t>(l)];
      for (int h = 0; h < c.num_attention_heads; ++h)
        for (int i = 0; i < T; ++i) {
          double sum = 0;
          for (int j = 0; j < T; ++j) {
            const float v = w[static_cast<std::size_t>((h * T + i) * T + j)];
            sum += v;
            if (j > i || (sliding && i - j >= c.sliding_window)) {
              EXPECT_EQ(v, 0.0f) << "layer " << l << " head " << h << " " << i << "," << j;
            }
          }
          EXPECT_NEAR(sum, 1.0, 1e-5);
        }
    }
    EXPECT_EQ(expected.find("s" + std::to_string(s) + ".logits_last")->shape,
              (std::vector<std::int64_t>{c.vocab_size}));
  }
}

INSTANTIATE_TEST_SUITE_P(Modern, Checkpoint,
                         ::testing::Values("qwen3_f32", "qwen3_bf16_sharded", "qwen2_bias", "llama3_bf16_sharded",
                                           "llama_mha_f32", "llama_bias_f16", "qwen2_sliding_f16", "gemma3_f32",
                                           "gemma3_bf16_sharded"));

TEST(HfFiles, EveryBrokenInputIsOneLineNamingTheProblem) {
  const json bad = read_json(kModernModels / "bad" / "manifest.json");
  std::map<std::string, int> seen;
  for (const json& c : bad["cases"]) {
    const fs::path dir = kModernModels / "bad" / c["path"].get<std::string>();
    const std::string stage = c["stage"];
    ++seen[stage];
    std::string msg;
    if (stage == "config")
      msg = error_of([&] { read_hf_config(dir / "config.json"); });
    else if (stage == "weights")
      msg = error_of([&] { HfWeights::open(dir); });
    else
      msg = error_of([&] { Tokenizer::from_folder(dir); });
    EXPECT_NE(msg.find(c["error"].get<std::string>()), std::string::npos) << c["name"] << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c["name"];
    // Only the one file is broken: the config of a broken weights case still reads.
    if (stage != "config") {
      EXPECT_NO_THROW(read_hf_config(dir / "config.json")) << c["name"];
    }
  }
  EXPECT_EQ(seen["config"], 10);
  EXPECT_EQ(seen["weights"], 7);
  EXPECT_EQ(seen["tokenizer"], 4);
}

// [SECTION] config.json forms and defaults
HfConfig parse(const json& j) { return parse_hf_config(j.dump(), "c.json"); }

json sizes(const char* model_type) {
  return {{"model_type", model_type}, {"hidden_size", 64},        {"num_hidden_layers", 6},
          {"num_attention_heads", 4}, {"intermediate_size", 128}, {"vocab_size", 100}};
}

TEST(HfConfig, DefaultsAreThoseOfEachTransformersConfigClass) {
  const HfConfig llama = parse(sizes("llama"));
  EXPECT_EQ(llama.num_key_value_heads, 4);  // LlamaConfig: = num_attention_heads
  EXPECT_EQ(llama.head_dim, 16);            // hidden / heads
  EXPECT_EQ(llama.rope.theta, 10000.0);
  EXPECT_EQ(llama.max_position_embeddings, 2048);
  EXPECT_FALSE(llama.tie_word_embeddings);
  EXPECT_EQ(llama.bos_token_id, 1);
  EXPECT_EQ(llama.eos_token_ids, std::vector<int>{2});
  EXPECT_FALSE(llama.qkv_bias || llama.o_bias || llama.qk_norm || llama.gemma_norms);
  EXPECT_EQ(llama.sliding, std::vector<bool>(6, false));
  // Qwen2Config and Qwen3Config default to 32 K/V heads, whatever num_attention_heads says.
  EXPECT_NE(error_of([] { parse(sizes("qwen3")); }).find("not a multiple of num_key_value_heads 32"),
            std::string::npos);
  json q = sizes("qwen3");
  q["num_key_value_heads"] = 2;
  const HfConfig qwen3 = parse(q);
  EXPECT_EQ(qwen3.head_dim, 128);  // Qwen3Config's own default, not hidden / heads
  EXPECT_TRUE(qwen3.qk_norm);
  q["model_type"] = "qwen2";
  const HfConfig qwen2 = parse(q);
  EXPECT_TRUE(qwen2.qkv_bias);  // Qwen2Attention: q/k/v biases always, o_proj none
  EXPECT_FALSE(qwen2.o_bias);
  EXPECT_EQ(qwen2.head_dim, 16);
  const HfConfig gemma = parse(sizes("gemma3_text"));
  EXPECT_EQ(gemma.num_key_value_heads, 4);
  EXPECT_EQ(gemma.head_dim, 256);
  EXPECT_EQ(gemma.rope.theta, 1e6);
  EXPECT_EQ(gemma.rope_local.theta, 1e4);
  EXPECT_EQ(gemma.score_scale(), 1.0 / 16);  // query_pre_attn_scalar 256
  EXPECT_EQ(gemma.sliding_window, 4096);
  EXPECT_EQ(gemma.sliding, (std::vector<bool>{true, true, true, true, true, false}));  // five of every six
  EXPECT_EQ(gemma.embedding_scale, 8.0);
  EXPECT_TRUE(gemma.tie_word_embeddings && gemma.gemma_norms && gemma.qk_norm);
  EXPECT_EQ(gemma.activation, HfConfig::Activation::GeluTanh);
}

TEST(HfConfig, QwenSlidingLayersFollowMaxWindowLayersOnlyWhenEnabled) {
  json j = sizes("qwen2");
  j["num_key_value_heads"] = 4;
  j["sliding_window"] = 32;
  j["max_window_layers"] = 4;
  EXPECT_EQ(parse(j).sliding, std::vector<bool>(6, false));  // use_sliding_window defaults to false
  j["use_sliding_window"] = true;
  EXPECT_EQ(parse(j).sliding, (std::vector<bool>{false, false, false, false, true, true}));
  EXPECT_EQ(parse(j).sliding_window, 32);
}

TEST(HfConfig, Gemma3NestsItsTextModelAndLeavesOutWhatEqualsTheDefaults) {
  // As google/gemma-3-4b-it's config.json: text_config holds only what differs.
  const json j = {{"model_type", "gemma3"},
                  {"text_config",
                   {{"model_type", "gemma3_text"},
                    {"hidden_size", 2560},
                    {"intermediate_size", 10240},
                    {"num_hidden_layers", 34},
                    {"sliding_window", 1024},
                    {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}}}},
                  {"vision_config", json::object()}};
  const HfConfig c = parse(j);
  EXPECT_TRUE(c.from_text_config);
  EXPECT_EQ(c.arch, HfArch::Gemma3);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.vocab_size, 262208);
  EXPECT_EQ(c.rope.scaling, HfRope::Scaling::Linear);
  EXPECT_EQ(c.rope.inv_freq(256)[0], 1.0 / 8);
  EXPECT_EQ(c.rope_local.scaling, HfRope::Scaling::None);
  EXPECT_EQ(c.sliding[4], true);
  EXPECT_EQ(c.sliding[5], false);
}

TEST(HfConfig, RopeParametersOfTransformers5AndTheOldTypeKey) {
  json j = sizes("gemma3_text");
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  HfConfig c = parse(j);
  EXPECT_EQ(c.rope.scaling, HfRope::Scaling::Linear);
  EXPECT_EQ(c.rope_local.theta, 1e4);
  json l = sizes("llama");
  l["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 500000.0},
                          {"factor", 32.0},          {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  EXPECT_EQ(parse(l).rope.scaling, HfRope::Scaling::Llama3);
  EXPECT_EQ(parse(l).rope.theta, 500000.0);
  json old = sizes("llama");
  old["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(parse(old).rope.scaling, HfRope::Scaling::Linear);
}

TEST(HfConfig, RefusalsNameTheFieldAndWhatIsSupported) {
  auto err = [](json j) { return error_of([&] { parse(j); }); };
  json j = sizes("llama");
  j["hidden_size"] = 66;
  EXPECT_NE(err(j).find("c.json: hidden_size 66 is not a multiple of num_attention_heads 4 and there is no head_dim"),
            std::string::npos);
  j = sizes("llama");
  j["num_key_value_heads"] = 8;
  EXPECT_NE(err(j).find("num_attention_heads 4 is not a multiple of num_key_value_heads 8"), std::string::npos);
  j = sizes("llama");
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_NE(err(j).find("rope_scaling.rope_type \"dynamic\" is not supported (default, linear, llama3)"),
            std::string::npos);
  j = sizes("llama");
  j["hidden_act"] = "relu";
  EXPECT_NE(err(j).find("hidden_act \"relu\" is not supported"), std::string::npos);
  j = sizes("gemma3_text");
  j["attn_logit_softcapping"] = 50.0;
  EXPECT_NE(err(j).find("attn_logit_softcapping is 50.0: softcapping is not supported"), std::string::npos);
  j = sizes("gemma3_text");
  j["layer_types"] = {"full_attention", "global",         "full_attention",
                      "full_attention", "full_attention", "full_attention"};
  EXPECT_NE(err(j).find("layer_types[1] is \"global\""), std::string::npos);
  j = sizes("llama");
  j["rms_norm_eps"] = "small";
  EXPECT_NE(err(j).find("rms_norm_eps is \"small\", not a number"), std::string::npos);
  j = sizes("llama");
  j["rope_theta"] = -1.0;
  EXPECT_NE(err(j).find("c.json: rope_theta -1.0 is not positive"), std::string::npos);
  j = sizes("gemma3_text");
  j["rope_local_base_freq"] = 0;
  EXPECT_NE(err(j).find("c.json: rope_local_base_freq 0 is not positive"), std::string::npos);
  j = sizes("llama");
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 0.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  EXPECT_NE(err(j).find("rope_scaling.low_freq_factor 0.0 is not positive"), std::string::npos);
  j["rope_scaling"]["low_freq_factor"] = 1.0;
  j["rope_scaling"]["original_max_position_embeddings"] = -8192;
  EXPECT_NE(err(j).find("rope_scaling.original_max_position_embeddings -8192 is not positive"), std::string::npos);
  EXPECT_NE(err({{"model_type", "gemma3"}}).find("has no text_config object"), std::string::npos);
  EXPECT_NE(
      err({{"hidden_size", 4}}).find("model_type is missing (supported: qwen3, qwen2, llama, gemma3_text, gemma3)"),
      std::string::npos);
  EXPECT_NE(error_of([] { read_hf_config("/nonexistent-mhaviz/config.json"); }).find("does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace mhaviz
