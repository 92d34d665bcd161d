// load_gpt on the checkpoints tests/models/make_checkpoints.py writes with torch (fixture
// gpt_checkpoints): both layouts, F32/F16/BF16, tied and untied heads, and every broken one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "json_file.hpp"
#include "mhaviz/gpt.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/safetensors.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test::kGptModels;

using test::read_json;

void expect_same_linear(const Linear& a, const Linear& b, const std::string& what) {
  EXPECT_EQ(a.in, b.in) << what;
  EXPECT_EQ(a.out, b.out) << what;
  EXPECT_EQ(a.weight, b.weight) << what;
  EXPECT_EQ(a.bias, b.bias) << what;
}

// Same numbers in every field the forward reads (names and layout may differ).
void expect_same_model(const GptModel& a, const GptModel& b) {
  EXPECT_EQ(a.config.n_layer, b.config.n_layer);
  EXPECT_EQ(a.config.n_head, b.config.n_head);
  EXPECT_EQ(a.config.n_embd, b.config.n_embd);
  EXPECT_EQ(a.config.n_ctx, b.config.n_ctx);
  EXPECT_EQ(a.config.vocab_size, b.config.vocab_size);
  EXPECT_EQ(a.config.layer_norm_eps, b.config.layer_norm_eps);
  EXPECT_EQ(a.config.qkv_bias, b.config.qkv_bias);
  EXPECT_EQ(a.wte, b.wte);
  EXPECT_EQ(a.wpe, b.wpe);
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (std::size_t i = 0; i < a.blocks.size(); ++i) {
    const GptBlock &x = a.blocks[i], &y = b.blocks[i];
    const std::string w = "block " + std::to_string(i);
    EXPECT_EQ(x.ln1_weight, y.ln1_weight) << w;
    EXPECT_EQ(x.ln1_bias, y.ln1_bias) << w;
    EXPECT_EQ(x.ln2_weight, y.ln2_weight) << w;
    EXPECT_EQ(x.ln2_bias, y.ln2_bias) << w;
    expect_same_linear(x.qkv, y.qkv, w + " qkv");
    expect_same_linear(x.proj, y.proj, w + " proj");
    expect_same_linear(x.fc, y.fc, w + " fc");
    expect_same_linear(x.fc_proj, y.fc_proj, w + " fc_proj");
  }
  EXPECT_EQ(a.lnf_weight, b.lnf_weight);
  EXPECT_EQ(a.lnf_bias, b.lnf_bias);
  // The head as the forward uses it: wte when tied.
  EXPECT_EQ(a.tied_head() ? a.wte : a.lm_head.weight, b.tied_head() ? b.wte : b.lm_head.weight);
}

// GPT-2's count: V·E + P·E + L·(12E² + 13E) + 2E, plus V·E for an untied head.
std::int64_t expected_parameters(const GptConfig& c, bool tied, bool qkv_bias) {
  const std::int64_t E = c.n_embd, V = c.vocab_size, P = c.n_ctx, L = c.n_layer;
  return V * E + P * E + L * (12 * E * E + 13 * E - (qkv_bias ? 0 : 3 * E)) + 2 * E + (tied ? 0 : V * E);
}

TEST(GptLoad, EveryCheckpointLoadsWithItsConfigAndShapes) {
  const json manifest = read_json(kGptModels / "manifest.json");
  ASSERT_GE(manifest["checkpoints"].size(), 7u);
  for (const json& c : manifest["checkpoints"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const GptModel m = load_gpt(kGptModels / name);
    const GptConfig& g = m.config;
    EXPECT_EQ(m.layout, c["layout"] == "hf" ? GptLayout::HuggingFace : GptLayout::Book);
    EXPECT_EQ(g.n_layer, c["L"]);
    EXPECT_EQ(g.n_head, c["H"]);
    EXPECT_EQ(g.n_embd, c["E"]);
    EXPECT_EQ(g.n_ctx, c["P"]);
    EXPECT_EQ(g.vocab_size, c["vocab_size"]);
    EXPECT_EQ(g.layer_norm_eps, c["eps"].get<float>());
    EXPECT_EQ(g.qkv_bias, c["qkv_bias"].get<bool>());
    EXPECT_EQ(m.folder, kGptModels / name);
    EXPECT_EQ(m.weights_file, kGptModels / name / "model.safetensors");
    const bool tied = c["layout"] == "hf" && c["tied"].get<bool>();
    EXPECT_EQ(m.tied_head(), tied);
    const auto E = static_cast<std::size_t>(g.n_embd), V = static_cast<std::size_t>(g.vocab_size);
    EXPECT_EQ(m.wte.size(), V * E);
    EXPECT_EQ(m.wpe.size(), static_cast<std::size_t>(g.n_ctx) * E);
    ASSERT_EQ(m.blocks.size(), static_cast<std::size_t>(g.n_layer));
    for (const GptBlock& b : m.blocks) {
      EXPECT_EQ(b.qkv.weight.size(), 3 * E * E);
      EXPECT_EQ(b.qkv.bias.size(), g.qkv_bias ? 3 * E : 0u);
      EXPECT_EQ(b.qkv.out, 3 * g.n_embd);
      EXPECT_EQ(b.fc.weight.size(), 4 * E * E);
      EXPECT_EQ(b.fc.out, 4 * g.n_embd);
      EXPECT_EQ(b.fc_proj.in, 4 * g.n_embd);
      EXPECT_EQ(b.ln2_bias.size(), E);
    }
    EXPECT_EQ(m.lm_head.weight.size(), tied ? 0u : V * E);
    EXPECT_EQ(m.parameter_count(), expected_parameters(g, tied, g.qkv_bias));
    // Prepared for the kernel a Linear may be held only packed: the count stays the same.
    GptModel prepared = load_gpt(kGptModels / name);
    prepare_gpt_forward(prepared);
    EXPECT_EQ(prepared.parameter_count(), expected_parameters(g, tied, g.qkv_bias)) << name;
  }
}

TEST(GptLoad, ConvWeightsAreTransposedToLinearOrientation) {
  const GptModel m = load_gpt(kGptModels / "hf_f32");
  const auto f = SafetensorsFile::open(kGptModels / "hf_f32" / "model.safetensors");
  const std::vector<float> c_attn = f.read(*f.find("h.1.attn.c_attn.weight"));  // [E, 3E]
  const std::vector<float> c_proj = f.read(*f.find("h.1.mlp.c_proj.weight"));   // [4E, E]
  const std::size_t E = 32;
  for (std::size_t o = 0; o < 3 * E; ++o)
    for (std::size_t i = 0; i < E; ++i) ASSERT_EQ(m.blocks[1].qkv.weight[o * E + i], c_attn[i * 3 * E + o]);
  for (std::size_t o = 0; o < E; ++o)
    for (std::size_t i = 0; i < 4 * E; ++i) ASSERT_EQ(m.blocks[1].fc_proj.weight[o * 4 * E + i], c_proj[i * E + o]);
}

TEST(GptLoad, BothLayoutsOfTheSameWeightsLoadToTheSameModel) {
  const GptModel hf = load_gpt(kGptModels / "hf_f32");
  const GptModel book = load_gpt(kGptModels / "book_same_as_hf_f32");
  EXPECT_EQ(hf.layout, GptLayout::HuggingFace);
  EXPECT_EQ(book.layout, GptLayout::Book);
  EXPECT_TRUE(hf.tied_head());
  EXPECT_FALSE(book.tied_head());
  expect_same_model(hf, book);
  EXPECT_EQ(book.parameter_count(), hf.parameter_count() + static_cast<std::int64_t>(hf.wte.size()));
}

TEST(GptLoad, APathToTheSafetensorsFileFindsConfigBesideIt) {
  const GptModel a = load_gpt(kGptModels / "hf_f16" / "model.safetensors");
  const GptModel b = load_gpt(kGptModels / "hf_f16");
  EXPECT_EQ(a.folder, kGptModels / "hf_f16");
  expect_same_model(a, b);
}

TEST(GptLoad, ProgressCountsEveryWeightByteAndCanCancel) {
  for (const char* name : {"hf_f32", "hf_bf16", "book_same_as_hf_f32"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(fs::exists(kGptModels / name / "model.safetensors"));
    const auto f = SafetensorsFile::open(kGptModels / name / "model.safetensors");
    std::uint64_t float_bytes = 0;
    for (const StTensor& t : f.tensors())
      if (dtype_is_float(t.dtype)) float_bytes += t.end - t.begin;
    std::vector<std::uint64_t> seen;
    const GptModel m = load_gpt(kGptModels / name, [&](std::uint64_t done, std::uint64_t total) {
      EXPECT_EQ(total, float_bytes);
      seen.push_back(done);
      return true;
    });
    ASSERT_GE(seen.size(), 3u);
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    EXPECT_EQ(seen.back(), float_bytes);
    expect_same_model(m, load_gpt(kGptModels / name));

    // Stopping halfway throws LoadCancelled (a LoadError) and nothing else is told after it.
    int calls = 0;
    EXPECT_THROW(load_gpt(kGptModels / name,
                          [&](std::uint64_t done, std::uint64_t total) {
                            ++calls;
                            return done < total / 2;
                          }),
                 LoadCancelled);
    EXPECT_LT(calls, static_cast<int>(seen.size()));
  }
}

TEST(GptLoad, HalfPrecisionValuesEqualTorchsConversion) {
  // Every F16 and BF16 bit pattern next to torch's .float() of it.
  const auto f = SafetensorsFile::open(kGptModels / "dtypes" / "all_halfs.safetensors");
  for (const char* d : {"f16", "bf16"}) {
    const std::vector<float> ours = f.read(*f.find(d));
    const std::vector<float> torch = f.read(*f.find(std::string(d) + "_as_f32"));
    ASSERT_EQ(ours.size(), 65536u);
    ASSERT_EQ(torch.size(), 65536u);
    for (std::size_t i = 0; i < ours.size(); ++i) {
      if (std::isnan(torch[i])) {
        ASSERT_TRUE(std::isnan(ours[i])) << d << " pattern " << i;
        continue;
      }
      ASSERT_EQ(std::memcmp(&ours[i], &torch[i], 4), 0)
          << d << " pattern " << i << ": " << ours[i] << " vs " << torch[i];
    }
  }
  // And in a model: hf_f16's c_attn, converted and transposed, against the stored halves.
  const GptModel m = load_gpt(kGptModels / "hf_f16");
  const auto st = SafetensorsFile::open(kGptModels / "hf_f16" / "model.safetensors");
  const StTensor* t = st.find("transformer.h.0.attn.c_attn.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, StDtype::F16);
  EXPECT_EQ(m.blocks[0].qkv.weight[5 * 32 + 3], st.read(*t)[3 * 96 + 5]);
}

TEST(GptLoad, BookWithoutQkvBiasHasNoQkvBias) {
  const GptModel m = load_gpt(kGptModels / "book_no_qkv_bias");
  EXPECT_FALSE(m.config.qkv_bias);
  for (const GptBlock& b : m.blocks) EXPECT_TRUE(b.qkv.bias.empty());
  EXPECT_EQ(m.config.n_head, 2);
}

TEST(GptLoad, EveryBrokenCheckpointIsOneLineNamingTheProblem) {
  const fs::path bad = kGptModels / "bad";
  const json manifest = read_json(bad / "manifest.json");
  ASSERT_GE(manifest["cases"].size(), 17u);
  for (const json& c : manifest["cases"]) {
    const std::string name = c["name"], expected = c["error"];
    const fs::path path = bad / c["path"].get<std::string>();
    if (c["stage"] != "load") {
      // Tokenizer files are not load_gpt's: the weights load; the tokenizer reports the error.
      EXPECT_NO_THROW(load_gpt(path)) << name;
      continue;
    }
    try {
      (void)load_gpt(path);
      ADD_FAILURE() << name << ": loaded";
    } catch (const LoadError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(expected), std::string::npos) << name << ": \"" << msg << "\" lacks \"" << expected << "\"";
      EXPECT_EQ(msg.find('\n'), std::string::npos) << name;
      // Names the file: the folder, the weights or config.json.
      EXPECT_NE(msg.find(path.filename().string()), std::string::npos) << name << ": " << msg;
    }
  }
}

// scripts/export_for_mhaviz.py as readers use it (tests/models/export_example.py, fixture
// gpt_exports): the book's GPTModel module, the same weights as a GPT2LMHeadModel state_dict,
// and the command line with --dtype f16.
const fs::path kExports = MHAVIZ_EXPORTS;

TEST(GptExport, TheBooksModuleAndItsHuggingFaceFormLoadAlike) {
  const GptModel book = load_gpt(kExports / "book");
  const GptModel hf = load_gpt(kExports / "hf");
  EXPECT_EQ(book.layout, GptLayout::Book);
  EXPECT_EQ(hf.layout, GptLayout::HuggingFace);
  EXPECT_TRUE(hf.tied_head()) << "export_hf drops an lm_head.weight that shares wte's storage";
  EXPECT_EQ(book.config.n_head, 3);
  EXPECT_EQ(book.config.n_embd, 48);
  EXPECT_TRUE(book.config.qkv_bias);
  expect_same_model(book, hf);
  // Buffers (the book's att.mask, GPT-2's attn.bias / masked_bias) are not exported.
  const auto f = SafetensorsFile::open(kExports / "book" / "model.safetensors");
  EXPECT_EQ(f.find("trf_blocks.0.att.mask"), nullptr);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const auto g = SafetensorsFile::open(kExports / "hf" / "model.safetensors");
  EXPECT_EQ(g.find("transformer.h.0.attn.bias"), nullptr);
  EXPECT_EQ(g.find("lm_head.weight"), nullptr);
}

TEST(GptExport, CommandLineExportInHalfPrecisionLoadsToTheRoundedWeights) {
  const GptModel f32 = load_gpt(kExports / "book");
  const GptModel f16 = load_gpt(kExports / "cli_f16");
  const auto st = SafetensorsFile::open(kExports / "cli_f16" / "model.safetensors");
  EXPECT_EQ(st.find("tok_emb.weight")->dtype, StDtype::F16);
  ASSERT_EQ(f16.wte.size(), f32.wte.size());
  for (std::size_t i = 0; i < f32.wte.size(); ++i)  // half keeps 11 significant bits
    ASSERT_NEAR(f16.wte[i], f32.wte[i], std::fabs(f32.wte[i]) * 0x1p-11f + 0x1p-24f) << i;
  EXPECT_EQ(f16.blocks[1].qkv.bias.size(), f32.blocks[1].qkv.bias.size());
}

}  // namespace
}  // namespace mhaviz
