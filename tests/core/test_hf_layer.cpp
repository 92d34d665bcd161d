// A Qwen3, Qwen2, Llama or Gemma 3 layer opened as the lesson's gqa module (hf_layer.hpp), on
// every checkpoint make_modern_checkpoints.py writes (MHAVIZ_MODERN) and every layer of each
// (the Gemma-shaped ones have sliding and full layers): the lesson's forward of the layer's
// input norm output gives the model forward's attention weights within 1e-5, and the float64
// reference's attention output (before the residual) within 1e-4; its loop oracle and its
// decode through a KV cache agree.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "json_file.hpp"
#include "mhaviz/hf_layer.hpp"
#include "mhaviz/kv_cache.hpp"
#include "mhaviz/safetensors.hpp"
#include "mhaviz/trace.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::kModernModels;

using test::max_abs_diff;

std::vector<std::string> token_names(std::size_t n) {
  std::vector<std::string> t;
  for (std::size_t i = 0; i < n; ++i) t.push_back("t" + std::to_string(i));
  return t;
}

class Layer : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return kModernModels / GetParam(); }
};

TEST_P(Layer, EveryLayerAsTheLessonGivesTheModelsWeightsAndOutput) {
  const HfModel m = load_hf_model(dir());
  const HfConfig& c = m.config;
  ASSERT_EQ(hf_layer_refusal(m), "");
  const SafetensorsFile expected = SafetensorsFile::open(dir() / "reference" / "expected.safetensors");
  const json sequences = test::read_json(dir() / "reference" / "input.json")["sequences"];
  int sliding = 0, full = 0;
  for (std::size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<int> ids = sequences[s].get<std::vector<int>>();
    const HfTrace tr = hf_forward(m, ids);
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      SCOPED_TRACE("sequence " + std::to_string(s) + ", layer " + std::to_string(l));
      const HfLayerTrace& lt = tr.layers[static_cast<std::size_t>(l)];
      const Session ses = hf_layer_session(m, l, token_names(ids.size()), lt.x.data);
      validate_session(ses);  // a session the format takes, as a file would be
      const ModelConfig& mc = ses.model;
      EXPECT_EQ(mc.variant, Variant::Gqa);
      EXPECT_EQ(mc.num_kv_groups, c.num_key_value_heads);
      EXPECT_EQ(head_dim(mc), c.head_dim);
      EXPECT_EQ(output_dim(mc), c.hidden_size);
      EXPECT_EQ(mc.sliding_window, m.blocks[static_cast<std::size_t>(l)].sliding ? c.sliding_window : 0);
      (mc.sliding_window ? sliding : full) += 1;
      const Model model = build_model(mc, ses.d_in());
      const Trace lesson = forward(model, ses.input_tensor());
      EXPECT_LT(max_abs_diff(lesson.weights.data, lt.weights.data), 1e-5f) << "attention weights";
      const std::string p = "s" + std::to_string(s) + ".layers." + std::to_string(l) + ".";
      EXPECT_LT(max_abs_diff(lt.x.data, expected.read(*expected.find(p + "attn_in"))), 1e-4f) << "X";
      EXPECT_LT(max_abs_diff(lesson.output.data, expected.read(*expected.find(p + "attn_out"))), 1e-4f) << "output";
      if (s == 0) {  // the loop oracle holds the fields a model's layer sets too
        const Trace oracle = forward_reference(model, ses.input_tensor());
        EXPECT_LT(max_abs_diff(oracle.weights.data, lesson.weights.data), 1e-5f) << "oracle weights";
        EXPECT_LT(max_abs_diff(oracle.output.data, lesson.output.data), 1e-4f) << "oracle output";
      }
      if (s == 1) {  // the KV cache view decodes the layer row by row from 3 rows to the same output
        const DecodeTrace dec = decode_with_cache(model, ses.input_tensor(), 3);
        EXPECT_LT(max_abs_diff(dec.trace.output.data, lesson.output.data), 1e-5f) << "decoded output";
      }
    }
  }
  EXPECT_GT(full, 0);
  if (c.arch == HfArch::Gemma3) {
    EXPECT_GT(sliding, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Modern, Layer,
                         ::testing::Values("qwen3_f32", "qwen3_bf16_sharded", "qwen2_bias", "llama3_bf16_sharded",
                                           "llama_mha_f32", "gemma3_f32", "gemma3_bf16_sharded"));

// Each option the layer needs is the model's: QK-norm's eps and Gemma's 1 + w, the local base
// and window of a sliding layer, the llama3-scaled frequencies, the query scale, out_proj's width.
TEST(HfLayer, TheLayersOptionsAreTheModels) {
  const HfModel gemma = load_hf_model(kModernModels / "gemma3_f32");
  const ModelConfig local = hf_layer_config(gemma, 0), global = hf_layer_config(gemma, 2);
  EXPECT_EQ(local.sliding_window, 4);
  EXPECT_EQ(local.rope_base, 10000.0);
  EXPECT_EQ(global.sliding_window, 0);
  EXPECT_EQ(global.rope_base, 1000000.0);
  EXPECT_EQ(local.query_pre_attn_scalar, 24.0);
  EXPECT_TRUE(local.qk_norm);
  EXPECT_EQ(local.qk_norm_eps, gemma.config.rms_norm_eps);
  const auto params = hf_layer_parameters(gemma, 1);
  EXPECT_EQ(params->tensors.at("q_norm.scale").values[3], 1.0f + gemma.blocks[1].q_norm[3]);
  const HfModel llama = load_hf_model(kModernModels / "llama3_bf16_sharded");
  const ModelConfig scaled = hf_layer_config(llama, 0);
  EXPECT_EQ(scaled.rope_inv_freq, llama.inv_freq_global);
  EXPECT_NE(scaled.rope_inv_freq, rope_inv_freq(scaled.rope_base, head_dim(scaled)));
  EXPECT_FALSE(scaled.qk_norm);
  const HfModel qwen3 = load_hf_model(kModernModels / "qwen3_f32");  // head_dim 32: d_out 128 against hidden 64
  const ModelConfig wide = hf_layer_config(qwen3, 1);
  EXPECT_EQ(wide.d_out, 128);
  EXPECT_EQ(wide.out_dim, 64);
  EXPECT_TRUE(wide.rope_inv_freq.empty());
  EXPECT_EQ(wide.query_pre_attn_scalar, 0.0);
  EXPECT_THROW(hf_layer_config(qwen3, 3), std::out_of_range);
  EXPECT_THROW(hf_layer_session(qwen3, 0, {"a"}, std::vector<float>(3)), std::invalid_argument);
}

// A layer the lesson cannot reproduce is refused in one line, not shown with other numbers.
TEST(HfLayer, AnOutputBiasIsRefused) {
  HfModel m = load_hf_model(kModernModels / "llama_mha_f32");
  m.config.o_bias = true;
  const std::string why = hf_layer_refusal(m);
  EXPECT_EQ(why, "Llama: o_proj has a bias (attention_bias), which the lesson's gqa out_proj has not");
  EXPECT_THROW(hf_layer_config(m, 0), std::invalid_argument);
}

// Saved and read back (its weights in a file, as the app writes them), a layer's session gives
// the same forward bit for bit: every field it carries is in the file format.
TEST(HfLayer, ItsSessionRoundTripsThroughAFile) {
  for (const char* name : {"llama3_bf16_sharded", "gemma3_f32", "qwen3_f32"}) {
    SCOPED_TRACE(name);
    const HfModel m = load_hf_model(kModernModels / name);
    const std::vector<int> ids = {5, 17, 230, 17, 99};
    const HfTrace tr = hf_forward(m, ids);
    Session ses = hf_layer_session(m, 0, token_names(ids.size()), tr.layers[0].x.data);
    const fs::path file = fs::path(::testing::TempDir()) / (std::string(name) + "-layer-0.safetensors");
    auto params = std::make_shared<ParameterFile>(*ses.model.weights);
    std::vector<StWriteTensor> out;
    for (const auto& [key, t] : params->tensors) out.push_back({key, t.shape, t.values.data()});
    write_safetensors_f32(file, out);
    params->path = file.string();
    ses.model.weights = params;
    const Session back = parse_session(session_to_json(ses));
    EXPECT_EQ(back.model.rope_inv_freq, ses.model.rope_inv_freq);
    const Trace a = forward(build_model(ses.model, ses.d_in()), ses.input_tensor());
    const Trace b = forward(build_model(back.model, back.d_in()), back.input_tensor());
    EXPECT_EQ(a.weights.data, b.weights.data);
    EXPECT_EQ(a.output.data, b.output.data);
  }
}

}  // namespace
}  // namespace mhaviz
