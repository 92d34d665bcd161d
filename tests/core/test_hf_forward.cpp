// The float32 forward of Qwen3, Qwen2, Llama and Gemma 3 (hf_model.hpp) against the float64
// reference of tests/models/hf_reference.py, on every checkpoint make_modern_checkpoints.py
// writes (in MHAVIZ_MODERN): every layer's attention weights and the last logits within
// 1e-4, on each backend this CPU runs; then broken folders, each refused in one line that
// names the tensor or the field.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <utility>

#include "json_file.hpp"
#include "key_panels_util.hpp"
#include "load_error_util.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/safetensors.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::kModernModels;

using test::read_json;

using test::max_abs_diff;

// Restores the process-wide backend when a test leaves.
struct BackendGuard {
  Backend saved = backend();
  ~BackendGuard() { set_backend(saved); }
};

class Forward : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return kModernModels / GetParam(); }
};

TEST_P(Forward, EveryLayersWeightsAndTheLastLogitsEqualTheFloat64Reference) {
  const BackendGuard guard;
  const SafetensorsFile expected = SafetensorsFile::open(dir() / "reference" / "expected.safetensors");
  const json sequences = read_json(dir() / "reference" / "input.json")["sequences"];
  for (const Backend be : {Backend::Avx512, Backend::Avx2, Backend::OpenBlas}) {
    if (!set_backend(be)) continue;
    SCOPED_TRACE(std::string(backend_name(be)));
    const HfModel m = load_hf_model(dir());  // packed for this backend as it loads
    for (std::size_t s = 0; s < sequences.size(); ++s) {
      const std::vector<int> ids = sequences[s].get<std::vector<int>>();
      const HfTrace tr = hf_forward(m, ids);
      const std::string p = "s" + std::to_string(s) + ".";
      ASSERT_EQ(tr.layers.size(), static_cast<std::size_t>(m.config.num_hidden_layers));
      for (std::size_t l = 0; l < tr.layers.size(); ++l) {
        const StTensor* want = expected.find(p + "layers." + std::to_string(l) + ".attn_weights");
        ASSERT_NE(want, nullptr);
        const Tensor& got = tr.layers[l].weights;
        ASSERT_EQ(got.shape, want->shape);
        EXPECT_LT(max_abs_diff(got.data, expected.read(*want)), 1e-4f) << p << "layer " << l;
        // Hidden cells are exactly 0, and the mask says which (the window on sliding layers).
        const AttentionMask& mask = tr.layers[l].mask;
        EXPECT_EQ(mask.window, m.blocks[l].sliding ? m.config.sliding_window : 0);
        const std::int64_t T = tr.tokens();
        for (std::int64_t h = 0; h < got.shape[1]; ++h)
          for (std::int64_t i = 0; i < T; ++i)
            for (std::int64_t j = 0; j < T; ++j)
              if (!mask.visible(i, j)) {
                ASSERT_EQ(got.data[static_cast<std::size_t>((h * T + i) * T + j)], 0.0f);
              }
      }
      const std::vector<float> logits = expected.read(*expected.find(p + "logits_last"));
      ASSERT_EQ(tr.logits_last.data.size(), logits.size());
      EXPECT_LT(max_abs_diff(tr.logits_last.data, logits), 1e-4f) << p << "logits_last";
      // The last logits are the LM head at the last row, whichever way they are asked for.
      EXPECT_EQ(hf_logits(m, tr, tr.tokens() - 1), tr.logits_last.data);
    }
  }
}

// A trace edited in place (the app's model view, `bench --edit-at`): after a change at
// position P only rows from P on are computed, against the keys and values kept per layer,
// and every tensor has the bits of a fresh forward. On OpenBLAS every row is computed again.
TEST_P(Forward, AnEditComputesFromTheFirstChangedTokenWithAFreshForwardsBits) {
  const BackendGuard guard;
  const std::vector<int> base{5, 17, 230, 17, 99, 5, 42, 7, 1, 64, 3, 88, 120, 9};
  struct Step {
    std::vector<int> ids;
    int from;  // recomputed_from on the kernel
  };
  std::vector<Step> steps{{base, 0}};
  steps.push_back({steps.back().ids, 14});  // the same ids: only the logits
  steps.back().ids.back() = 200;            // the last token changed
  steps.back().from = 13;
  steps.push_back({steps.back().ids, 6});
  steps.back().ids[6] = 11;  // one in the middle
  steps.push_back({steps.back().ids, 14});
  steps.back().ids.push_back(77);  // one appended: a new row, every row longer by a key
  steps.push_back({std::vector<int>(steps.back().ids.begin(), steps.back().ids.end() - 3), 12});  // three dropped
  steps.push_back({steps.back().ids, 12});                                                        // unchanged again
  for (const Backend be : {Backend::Avx512, Backend::Avx2, Backend::OpenBlas}) {
    if (!set_backend(be)) continue;
    SCOPED_TRACE(std::string(backend_name(be)));
    const HfModel m = load_hf_model(dir());
    HfTrace edited;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      SCOPED_TRACE("step " + std::to_string(k));
      hf_forward(m, steps[k].ids, edited);
      const HfTrace fresh = hf_forward(m, steps[k].ids);
      EXPECT_EQ(edited.recomputed_from, be == Backend::OpenBlas ? 0 : steps[k].from);
      ASSERT_EQ(edited.layers.size(), fresh.layers.size());
      for (std::size_t l = 0; l < fresh.layers.size(); ++l) {
        const HfLayerTrace &a = edited.layers[l], &b = fresh.layers[l];
        for (const auto& [got, want] : {std::pair{&a.weights, &b.weights}, {&a.x, &b.x}, {&a.k, &b.k}, {&a.v, &b.v}}) {
          ASSERT_EQ(got->shape, want->shape) << "layer " << l;
          ASSERT_EQ(got->data, want->data) << "layer " << l;
        }
      }
      EXPECT_EQ(edited.final_norm.data, fresh.final_norm.data);
      EXPECT_EQ(edited.logits_last.data, fresh.logits_last.data);
    }
  }
}

// Edits of a sequence longer than a few key panels (32 keys each): the panels holding only
// keys before the edit are kept from the forward before, not packed again, and every tensor
// still has a fresh forward's bits (sliding layers read from their window's panel on).
TEST_P(Forward, EditsOfALongSequenceKeepTheKeyPanelsBeforeThem) {
  const BackendGuard guard;
  for (const Backend be : {Backend::Avx512, Backend::Avx2}) {
    if (!set_backend(be)) continue;
    SCOPED_TRACE(std::string(backend_name(be)));
    const HfModel m = load_hf_model(dir());
    std::mt19937 gen(5);
    std::vector<int> ids(100);
    for (int& id : ids) id = static_cast<int>(gen() % 200);
    HfTrace edited;
    for (const int at : {-1, 99, 70, 40, 95, 100, 33}) {  // -1: the first forward; 100: one appended
      SCOPED_TRACE("edit at " + std::to_string(at));
      if (at == static_cast<int>(ids.size()))
        ids.push_back(7);
      else if (at >= 0)
        ids[static_cast<std::size_t>(at)] = (ids[static_cast<std::size_t>(at)] + 1) % 200;
      hf_forward(m, ids, edited);
      const HfTrace fresh = hf_forward(m, ids);
      EXPECT_EQ(edited.recomputed_from, std::max(at, 0));
      for (std::size_t l = 0; l < fresh.layers.size(); ++l) {
        const HfLayerTrace &a = edited.layers[l], &b = fresh.layers[l];
        ASSERT_EQ(a.weights.data, b.weights.data) << "layer " << l;
        ASSERT_EQ(a.k.data, b.k.data) << "layer " << l;
        // The kept panels of the keys a fresh forward packed are those keys' panels.
        SCOPED_TRACE("layer " + std::to_string(l));
        test::expect_panels_hold(a.key_panels, b.key_panels);
      }
      EXPECT_EQ(edited.logits_last.data, fresh.logits_last.data);
    }
    // An edit at 99 does not pack the first panel again, nor the keys before 99 in the panel
    // of keys 96-127: values planted in key 0's and key 96's columns stay, the one planted in
    // key 99's is written over.
    const auto cell = [](const HfLayerTrace& L, int key) {
      return static_cast<std::size_t>(key / 32 * 32 * L.key_panels.head_dim + key % 32);
    };
    for (HfLayerTrace& L : edited.layers)
      for (const int key : {0, 96, 99}) L.key_panels.floats[cell(L, key)] = 1234.5f;
    ids[99] = (ids[99] + 1) % 200;
    hf_forward(m, ids, edited);
    for (const HfLayerTrace& L : edited.layers) {
      EXPECT_EQ(L.key_panels.from, 0);
      EXPECT_EQ(L.key_panels.floats[cell(L, 0)], 1234.5f);
      EXPECT_EQ(L.key_panels.floats[cell(L, 96)], 1234.5f);
      EXPECT_EQ(L.key_panels.floats[cell(L, 99)], L.k.data[static_cast<std::size_t>(99 * L.key_panels.head_dim)]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modern, Forward,
                         ::testing::Values("qwen3_f32", "qwen3_bf16_sharded", "qwen2_bias", "llama3_bf16_sharded",
                                           "llama_mha_f32", "llama_bias_f16", "qwen2_sliding_f16", "gemma3_f32",
                                           "gemma3_bf16_sharded"));

TEST(HfForward, ArchitecturesGetTheirOwnBlocks) {
  const HfModel gemma = load_hf_model(kModernModels / "gemma3_f32");
  const HfBlock& g = gemma.blocks[0];
  EXPECT_FALSE(g.pre_ff_norm.empty());
  EXPECT_FALSE(g.q_norm.empty());
  EXPECT_TRUE(gemma.tied);
  EXPECT_TRUE(g.sliding);
  EXPECT_FALSE(gemma.blocks[2].sliding);
  EXPECT_NE(gemma.inv_freq_local, gemma.inv_freq_global);
  const HfModel qwen2 = load_hf_model(kModernModels / "qwen2_bias");
  EXPECT_FALSE(qwen2.blocks[0].q.bias.empty());
  EXPECT_TRUE(qwen2.blocks[0].o.bias.empty());
  EXPECT_TRUE(qwen2.blocks[0].q_norm.empty());
  EXPECT_TRUE(qwen2.blocks[0].pre_ff_norm.empty());
  EXPECT_FALSE(qwen2.tied);
}

// The FLOPs bench reports count each layer's (query, key) pairs as its mask shows them: the
// window on Gemma's sliding layers, every earlier key on the others; from a row on, only the
// rows an edit computes.
TEST(HfForward, FlopsCountThePairsEachLayersMaskShows) {
  const HfModel m = load_hf_model(kModernModels / "gemma3_f32");
  const HfConfig& c = m.config;
  const int T = 3 * c.sliding_window + 2;
  ASSERT_GT(c.sliding_window, 1);
  const double C = c.hidden_size, Q = static_cast<double>(c.num_attention_heads) * c.head_dim,
               KV = static_cast<double>(c.num_key_value_heads) * c.head_dim, I = c.intermediate_size;
  for (const int from : {0, T - 1}) {
    double want = 2.0 * C * c.vocab_size;
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      const AttentionMask mask = m.layer_mask(l);
      for (int i = from; i < T; ++i) {
        int pairs = 0;
        for (int j = 0; j < T; ++j) pairs += mask.visible(i, j) ? 1 : 0;
        want += 2.0 * (2.0 * C * Q + 2.0 * C * KV + 3.0 * C * I) + 4.0 * Q * pairs;
      }
    }
    EXPECT_DOUBLE_EQ(hf_forward_flops(c, T, from), want) << "from " << from;
  }
}

TEST(HfForward, AReusedTraceGivesTheFreshValues) {
  // Longer, then shorter, then the same length with other ids: each equal to a fresh forward.
  const HfModel m = load_hf_model(kModernModels / "gemma3_bf16_sharded");
  HfTrace reused;
  for (const std::vector<int>& ids :
       {std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, std::vector<int>{5, 17, 230, 17, 99, 5, 42},
        std::vector<int>{9, 8, 7, 6, 5, 4, 3}}) {
    hf_forward(m, ids, reused);
    const HfTrace fresh = hf_forward(m, ids);
    ASSERT_EQ(reused.layers.size(), fresh.layers.size());
    for (std::size_t l = 0; l < fresh.layers.size(); ++l) {
      EXPECT_EQ(reused.layers[l].weights.shape, fresh.layers[l].weights.shape);
      EXPECT_EQ(reused.layers[l].weights.data, fresh.layers[l].weights.data) << "layer " << l;
    }
    EXPECT_EQ(reused.final_norm.data, fresh.final_norm.data);
    EXPECT_EQ(reused.logits_last.data, fresh.logits_last.data);
  }
}

// A BF16 checkpoint on the kernel is held as BF16 panels (two bytes a weight, the tied head's
// included), a float32 one as float panels; norms and biases stay float32. hf_weight_bytes counts
// them all but an untied embedding table.
TEST(HfForward, Bf16WeightsAreHeldAtTheirStoredWidth) {
  const BackendGuard guard;
  int untied = 0;
  for (const Backend be : {Backend::Avx512, Backend::Avx2}) {
    if (!set_backend(be)) continue;
    for (const char* name : {"qwen3_bf16_sharded", "gemma3_bf16_sharded", "qwen3_f32"}) {
      SCOPED_TRACE(std::string(name) + " on " + std::string(backend_name(be)));
      const HfModel m = load_hf_model(kModernModels / name);
      const bool bf16 = std::string(name).find("bf16") != std::string::npos;
      // An untied model's embedding table is held apart, and a one-row forward reads one row of it.
      EXPECT_EQ(m.embed.empty(), m.tied);
      untied += m.tied ? 0 : 1;
      std::int64_t linear_weights = 0, floats = static_cast<std::int64_t>(m.final_norm.size());
      std::vector<const Linear*> linears{&m.lm_head};
      for (const HfBlock& b : m.blocks) {
        for (const Linear* l : {&b.q, &b.k, &b.v, &b.o, &b.gate, &b.up, &b.down}) linears.push_back(l);
        for (const std::vector<float>* v :
             {&b.input_norm, &b.post_attn_norm, &b.pre_ff_norm, &b.post_ff_norm, &b.q_norm, &b.k_norm})
          floats += static_cast<std::int64_t>(v->size());
      }
      for (const Linear* l : linears) {
        EXPECT_TRUE(l->weight.empty()) << l->name;
        EXPECT_EQ(l->packed_bf16.empty(), !bf16) << l->name;
        EXPECT_EQ(l->packed.empty(), bf16) << l->name;
        linear_weights += static_cast<std::int64_t>(l->packed_bf16.size() + l->packed.size());
        floats += static_cast<std::int64_t>(l->bias.size());
      }
      EXPECT_EQ(hf_weight_bytes(m), linear_weights * (bf16 ? 2 : 4) + floats * 4);
    }
  }
  EXPECT_GT(untied, 0) << "no untied checkpoint: the embedding table's exclusion is untested";
}

TEST(HfForward, RefusesIdsOutsideTheVocabularyAndAnEmptySequence) {
  const HfModel m = load_hf_model(kModernModels / "llama_mha_f32");
  EXPECT_THROW(hf_forward(m, std::vector<int>{}), std::invalid_argument);
  EXPECT_THROW(hf_forward(m, std::vector<int>{1, 300}), std::invalid_argument);
  EXPECT_THROW(hf_forward(m, std::vector<int>{-1}), std::invalid_argument);
  EXPECT_THROW(hf_forward(m, std::vector<int>(129, 1)), std::invalid_argument);  // max_position_embeddings 128
}

// A copy of a good checkpoint whose config.json is changed: the weights no longer match it.
fs::path broken_copy(const std::string& name, const std::function<void(json&)>& change) {
  const fs::path to = fs::path(::testing::TempDir()) / ("mhaviz_hf_forward_" + name);
  fs::remove_all(to);
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(kModernModels / name))
    if (e.is_regular_file()) fs::copy_file(e.path(), to / e.path().filename());
  json c = read_json(to / "config.json");
  change(c);
  std::ofstream(to / "config.json") << c.dump(2);
  return to;
}

TEST(HfForward, AMissingOrMisshapenTensorIsOneLineNamingIt) {
  struct Case {
    std::string model;
    std::function<void(json&)> change;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"qwen3_f32", [](json& c) { c["tie_word_embeddings"] = false; }, "no tensor \"lm_head.weight\""},
      {"llama_mha_f32", [](json& c) { c["attention_bias"] = true; },
       "no tensor \"model.layers.0.self_attn.q_proj.bias\""},
      {"llama_mha_f32", [](json& c) { c["num_key_value_heads"] = 2; },
       "tensor \"model.layers.0.self_attn.k_proj.weight\" is [64, 64], config.json gives [32, 64]"},
      {"qwen2_bias", [](json& c) { c["intermediate_size"] = 128; },
       "tensor \"model.layers.0.mlp.gate_proj.weight\" is [96, 64], config.json gives [128, 64]"},
      {"qwen3_f32", [](json& c) { c["model_type"] = "gemma3_text"; },
       "no tensor \"model.layers.0.pre_feedforward_layernorm.weight\""},
  };
  for (const Case& c : cases) {
    const fs::path dir = broken_copy(c.model, c.change);
    const std::string e = test::load_error_of([&] { load_hf_model(dir); });
    EXPECT_NE(e.find(c.error), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    fs::remove_all(dir);
  }
}

TEST(HfForward, TheFixturesBrokenConfigsAndWeightsAreRefusedAsTheFilesAlone) {
  const json bad = read_json(kModernModels / "bad" / "manifest.json");
  int checked = 0;
  for (const json& c : bad["cases"]) {
    if (c["stage"] == "tokenizer") continue;
    const std::string e =
        test::load_error_of([&] { load_hf_model(kModernModels / "bad" / c["path"].get<std::string>()); });
    EXPECT_NE(e.find(c["error"].get<std::string>()), std::string::npos) << c["name"] << ": " << e;
    ++checked;
  }
  EXPECT_GE(checked, 15);
}

}  // namespace
}  // namespace mhaviz
