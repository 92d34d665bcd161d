// GptWorker on a Qwen, Llama or Gemma folder: the model view's one worker opens either kind.
// Its result must be hf_forward's bit for bit, answer for every layer the weights and the
// mask the forward applied (the window on Gemma's sliding layers), tokenize with the
// folder's tokenizer.json and its template, and never hand a GPT trace to an HF model or
// the other way round when one replaces the other.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mhaviz/gpt_worker.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using test::kGptModels;
using test::kModernModels;
constexpr int kBos = 256;

// UTF-8 of a code point below 0x800 (the byte-level alphabet's range).
std::string utf8(int cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// A byte-level BPE tokenizer.json without merges (ids 0-255: the bytes) whose template puts
// <bos> (256) first, as Gemma's and Llama 3.1's do.
nlohmann::json byte_tokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    vocab[utf8(printable ? b : 256 + extra++)] = b;
  }
  using nlohmann::json;
  json t;
  t["version"] = "1.0";
  t["added_tokens"] = json::array({{{"id", kBos},
                                    {"content", "<bos>"},
                                    {"single_word", false},
                                    {"lstrip", false},
                                    {"rstrip", false},
                                    {"normalized", false},
                                    {"special", true}}});
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  json bos, seq, special;
  bos["SpecialToken"] = {{"id", "<bos>"}, {"type_id", 0}};
  seq["Sequence"] = {{"id", "A"}, {"type_id", 0}};
  special["<bos>"] = {{"id", "<bos>"}, {"ids", json::array({kBos})}, {"tokens", json::array({"<bos>"})}};
  t["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({bos, seq})},
                         {"pair", json::array({seq})},
                         {"special_tokens", special}};
  t["decoder"] = {{"type", "ByteLevel"}};
  t["model"] = {{"type", "BPE"},          {"dropout", nullptr}, {"unk_token", nullptr},   {"byte_fallback", false},
                {"ignore_merges", false}, {"vocab", vocab},     {"merges", json::array()}};
  return t;
}

// The checkpoint `name` copied with that tokenizer beside it.
struct Folder {
  fs::path path;
  explicit Folder(const std::string& name) {
    path = fs::temp_directory_path() / ("mhaviz_hf_worker_" + std::to_string(getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
    for (const auto& e : fs::directory_iterator(kModernModels / name))
      if (e.is_regular_file()) fs::copy_file(e.path(), path / e.path().filename());
    std::ofstream(path / "tokenizer.json") << byte_tokenizer().dump();
  }
  ~Folder() { fs::remove_all(path); }
};

std::shared_ptr<const GptWorker::Result> run(GptWorker& w, std::vector<int> ids) {
  w.set_ids(std::move(ids));
  w.wait_idle();
  EXPECT_EQ(w.status().error, "");
  return w.result();
}

TEST(HfWorker, ResultIsHfForwardBitForBitWithTheConfigsFacts) {
  const Folder f("qwen3_f32");
  GptWorker w;
  w.open(f.path);
  const std::vector<int> ids = {3, 17, 200, 45, 45, 9, 120};
  const auto r = run(w, ids);
  ASSERT_TRUE(r && r->hf_trace);
  EXPECT_EQ(r->trace, nullptr);
  EXPECT_EQ(r->ids(), ids);
  const ModelFacts& facts = r->loaded.facts;
  EXPECT_TRUE(facts.hf);
  EXPECT_EQ(facts.model_type, "qwen3");
  EXPECT_EQ(facts.architecture, "Qwen3");
  EXPECT_EQ(facts.layers, 3);
  EXPECT_EQ(facts.heads, 4);
  EXPECT_EQ(facts.kv_heads, 2);
  EXPECT_EQ(facts.head_dim, 32);
  EXPECT_EQ(facts.context, 128);
  EXPECT_EQ(facts.sliding_layers(), 0);
  const HfModel m = load_hf_model(f.path);
  const HfTrace direct = hf_forward(m, ids);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(r->weights(l).data, direct.layers[static_cast<std::size_t>(l)].weights.data) << l;
    EXPECT_EQ(r->weights(l).shape, (std::vector<std::int64_t>{1, 4, 7, 7}));
  }
  EXPECT_EQ(hf_logits(*r->loaded.hf, *r->hf_trace, 6), direct.logits_last.data);
  EXPECT_EQ(hf_logits(*r->loaded.hf, *r->hf_trace, 2), hf_logits(m, direct, 2));
  // A second forward (the first still held here) and a third, which writes the first's buffers.
  const auto r2 = run(w, {5, 6});
  const std::vector<float> kept = r->weights(1).data;
  const auto r3 = run(w, ids);
  EXPECT_EQ(r->weights(1).data, kept);
  EXPECT_EQ(r3->weights(1).data, direct.layers[1].weights.data);
  EXPECT_EQ(r2->tokens(), 2);
}

// Typing at the end of the text: the worker computes into the older trace it keeps, and only
// the rows from the first id that differs from that trace's are computed, with a fresh
// forward's bits; the result says from which row.
TEST(HfWorker, AnEditComputesOnlyFromTheFirstChangedRow) {
  const Folder f("gemma3_bf16_sharded");
  GptWorker w;
  w.open(f.path);
  std::vector<int> ids = {3, 17, 200, 45, 45, 9, 120, 8};
  EXPECT_EQ(run(w, ids)->recomputed_from, 0);
  ids.back() = 99;
  EXPECT_EQ(run(w, ids)->recomputed_from, 0);  // nothing kept to compute into yet
  ids.back() = 100;
  const auto r = run(w, ids);  // into the first trace, which differs at the last row only
  ASSERT_TRUE(r && r->hf_trace);
  EXPECT_EQ(r->recomputed_from, 7);
  const HfModel m = load_hf_model(f.path);
  const HfTrace direct = hf_forward(m, ids);
  for (int l = 0; l < m.config.num_hidden_layers; ++l)
    EXPECT_EQ(r->weights(l).data, direct.layers[static_cast<std::size_t>(l)].weights.data) << l;
  EXPECT_EQ(hf_logits(*r->loaded.hf, *r->hf_trace, 7), direct.logits_last.data);
}

TEST(HfWorker, GemmaSlidingLayersHaveTheirWindowInFactsAndMask) {
  const Folder f("gemma3_f32");
  GptWorker w;
  w.open(f.path);
  const auto r = run(w, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(r && r->hf_trace);
  const ModelFacts& facts = r->loaded.facts;
  EXPECT_EQ(facts.model_type, "gemma3_text");
  EXPECT_EQ(facts.window, (std::vector<int>{4, 4, 0}));
  EXPECT_EQ(facts.sliding_layers(), 2);
  EXPECT_EQ(facts.sliding_window(), 4);
  EXPECT_EQ(r->mask(0).window, 4);
  EXPECT_EQ(r->mask(2).window, 0);
  EXPECT_TRUE(r->mask(2).causal);
  // Query 8 of a sliding layer puts no weight on key 4 (8 - 4 >= W) and some on key 5.
  const Tensor& w0 = r->weights(0);
  EXPECT_EQ(w0.data[8 * 9 + 4], 0.0f);
  EXPECT_GT(w0.data[8 * 9 + 5], 0.0f);
  EXPECT_GT(r->weights(2).data[8 * 9 + 4], 0.0f);
}

TEST(HfWorker, TextGoesThroughTokenizerJsonAndItsTemplate) {
  const Folder f("llama3_bf16_sharded");
  GptWorker w;
  w.open(f.path);
  w.set_text("hi");
  w.wait_idle();
  ASSERT_TRUE(w.result());
  EXPECT_EQ(w.result()->ids(), (std::vector<int>{kBos, 'h', 'i'}));
  PromptOptions bare;
  bare.template_tokens = false;
  w.set_text("hi", bare);
  w.wait_idle();
  EXPECT_EQ(w.result()->ids(), (std::vector<int>{'h', 'i'}));
  w.set_text(std::string(200, 'a'));
  w.wait_idle();
  EXPECT_EQ(w.status().error, "text: 201 tokens is longer than the model's context of 128");
}

TEST(HfWorker, AModelOfTheOtherKindNeverGetsTheOldOnesTrace) {
  const Folder f("qwen3_f32");
  GptWorker w;
  const std::vector<int> ids = {34, 71, 62, 58};
  w.open(kGptModels / "hf_f32");
  const auto gpt = run(w, ids);
  ASSERT_TRUE(gpt && gpt->trace);
  EXPECT_FALSE(gpt->loaded.facts.hf);
  EXPECT_EQ(gpt->loaded.facts.kv_heads, gpt->loaded.facts.heads);
  // The last request reruns on the newly opened model, into a trace of its own kind.
  w.open(f.path);
  w.wait_idle();
  const auto hf = w.result();
  ASSERT_TRUE(hf && hf->hf_trace);
  EXPECT_EQ(hf->trace, nullptr);
  EXPECT_EQ(hf->ids(), ids);
  EXPECT_EQ(hf->weights(2).data, hf_forward(load_hf_model(f.path), ids).layers[2].weights.data);
  // And back: a fresh GPT trace (recomputed from row 0), equal to the first.
  w.open(kGptModels / "hf_f32");
  w.wait_idle();
  const auto back = w.result();
  ASSERT_TRUE(back && back->trace);
  EXPECT_EQ(back->hf_trace, nullptr);
  EXPECT_EQ(back->recomputed_from, 0);
  EXPECT_EQ(back->weights(1).data, gpt->weights(1).data);
  // A folder that fails to load leaves the model shown.
  w.open(f.path / "no-such-folder");
  w.wait_idle();
  EXPECT_NE(w.status().error, "");
  EXPECT_FALSE(w.loaded()->facts.hf);
}

}  // namespace
}  // namespace mhaviz
