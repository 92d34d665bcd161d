// GptWorker: a model loaded and run off the calling thread. Its results must be the direct
// forward's bit for bit, published results must never change under a reader, an edit must
// reuse the rows before it, and the caller must never wait on a forward or a load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpt_test_util.hpp"
#include "mhaviz/gpt_worker.hpp"
#include "mhaviz/safetensors.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using test::kGptModels;
const std::vector<int> kIds = {34, 71, 262, 258, 84, 255, 0, 260, 188, 72};

std::shared_ptr<const GptWorker::Result> run_ids(GptWorker& w, const std::vector<int>& ids) {
  w.set_ids(ids);
  w.wait_idle();
  auto r = w.result();
  EXPECT_TRUE(r && r->trace->ids == ids) << w.status().error;
  return r;
}

TEST(GptWorker, ResultIsTheDirectForwardBitForBit) {
  GptWorker w;
  w.open(kGptModels / "hf_f32");
  const auto r = run_ids(w, kIds);
  ASSERT_TRUE(r);
  EXPECT_EQ(w.status().error, "");
  GptModel m = load_gpt(kGptModels / "hf_f32");
  prepare_gpt_forward(m);
  const GptTrace direct = gpt_forward(m, kIds);
  ASSERT_EQ(r->trace->layers.size(), direct.layers.size());
  for (std::size_t l = 0; l < direct.layers.size(); ++l)
    EXPECT_EQ(r->trace->layers[l].weights.data, direct.layers[l].weights.data) << l;
  EXPECT_EQ(r->trace->logits_last.data, direct.logits_last.data);
  EXPECT_EQ(r->loaded.tokenizer->vocab_size(), m.config.vocab_size);
}

TEST(GptWorker, AnEditReusesTheRowsBeforeItAndNeverTouchesAHeldResult) {
  GptWorker w;
  w.open(kGptModels / "hf_f32");
  std::vector<int> a = kIds, b = kIds, c = kIds;
  b[7] = 5;
  c[8] = 6;  // c differs from a from position 8 on, from b from 7 on
  run_ids(w, a);
  run_ids(w, b);
  // The third forward writes the first one's trace (nobody holds it): it agrees with c up to 8.
  const auto rc = run_ids(w, c);
  EXPECT_EQ(rc->recomputed_from, 8);
  const std::vector<float> kept = rc->trace->layers[1].weights.data;

  // A held result is never written: while rc is held, a forward for c goes to a fresh trace.
  const auto rb = run_ids(w, b);
  const auto rc2 = run_ids(w, c);
  EXPECT_EQ(rc->trace->ids, c);
  EXPECT_EQ(rc->trace->layers[1].weights.data, kept);
  EXPECT_EQ(rc2->trace->layers[1].weights.data, kept);  // and the same numbers recomputed
  EXPECT_LT(rb->generation, rc2->generation);
}

// The app holds the result it shows until the next one is drawn, and a teacher types faster
// than a GPT-2-small forward: with the spare trace held, the next forward starts from a copy
// of the newest trace, so an edit at the end still recomputes only its rows.
TEST(GptWorker, WithTheSpareHeldAnEditStillRecomputesOnlyItsRows) {
  GptWorker w;
  w.open(kGptModels / "hf_f32");
  std::vector<int> a = kIds, b = kIds, c = kIds;
  b[7] = 5;
  c[7] = 5;
  c[9] = 6;  // c differs from b from position 9 on
  const auto ra = run_ids(w, a);
  run_ids(w, b);
  const std::vector<float> kept = ra->trace->layers[1].weights.data;
  const auto rc = run_ids(w, c);  // the spare is a's trace, held by ra
  EXPECT_EQ(rc->recomputed_from, 9);
  EXPECT_EQ(ra->trace->ids, a);
  EXPECT_EQ(ra->trace->layers[1].weights.data, kept);
  GptModel m = load_gpt(kGptModels / "hf_f32");
  prepare_gpt_forward(m);
  const GptTrace direct = gpt_forward(m, c);
  for (std::size_t l = 0; l < direct.layers.size(); ++l)
    EXPECT_EQ(rc->trace->layers[l].weights.data, direct.layers[l].weights.data) << l;
  EXPECT_EQ(rc->trace->logits_last.data, direct.logits_last.data);
}

TEST(GptWorker, AFailedOpenOrForwardKeepsTheModelAndSaysWhy) {
  GptWorker w;
  w.set_ids(kIds);
  w.wait_idle();
  EXPECT_EQ(w.status().error, "no model is open");
  w.open(kGptModels / "hf_f32");
  run_ids(w, kIds);
  w.open(kGptModels / "no-such-model");
  w.wait_idle();
  EXPECT_NE(w.status().error.find("no-such-model"), std::string::npos) << w.status().error;
  ASSERT_TRUE(w.loaded());
  EXPECT_EQ(w.loaded()->path, kGptModels / "hf_f32");
  w.set_ids({0, 1, 99999});
  w.wait_idle();
  EXPECT_NE(w.status().error, "");
  EXPECT_EQ(w.result()->trace->ids, kIds);  // the last good result stays
  w.set_text("");
  w.wait_idle();
  EXPECT_EQ(w.status().error, "text: empty; type at least one token");
  w.set_text(std::string(20, 'x'));  // 20 byte tokens: the tiny vocabulary merges no "xx"
  w.wait_idle();
  EXPECT_EQ(w.status().error, "text: 20 tokens is longer than the model's context of 16");

  // A new model reruns the last request, its text tokenized by the new tokenizer.
  w.set_text("the thin", {SpecialFirst::EndOfText});
  w.wait_idle();
  const std::vector<int> ids = w.result()->trace->ids;
  EXPECT_EQ(ids.front(), w.loaded()->tokenizer->eot_id());
  EXPECT_EQ(w.loaded()->tokenizer->decode(ids), "<|endoftext|>the thin");
  w.open(kGptModels / "hf_f16");
  w.wait_idle();
  EXPECT_EQ(w.loaded()->path, kGptModels / "hf_f16");
  EXPECT_EQ(w.result()->loaded.path, kGptModels / "hf_f16");
  EXPECT_EQ(w.result()->trace->ids, ids);
  EXPECT_EQ(w.status().error, "");
}

// A book-layout checkpoint of a random GPT big enough that a forward takes tens of ms.
fs::path write_big_checkpoint() {
  GptConfig c;
  c.n_layer = 8;
  c.n_head = 4;
  c.n_embd = 256;
  c.n_ctx = 512;
  c.vocab_size = 263;  // the test checkpoints' tiny tokenizer
  const GptModel m = test::random_gpt(c, false, 11);
  const fs::path dir = fs::temp_directory_path() / ("mhaviz-worker-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::int64_t E = c.n_embd, V = c.vocab_size, P = c.n_ctx;
  std::vector<StWriteTensor> t = {{"tok_emb.weight", {V, E}, m.wte.data()},
                                  {"pos_emb.weight", {P, E}, m.wpe.data()},
                                  {"final_norm.scale", {E}, m.lnf_weight.data()},
                                  {"final_norm.shift", {E}, m.lnf_bias.data()},
                                  {"out_head.weight", {V, E}, m.lm_head.weight.data()}};
  std::vector<std::string> names;
  names.reserve(16 * static_cast<std::size_t>(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    const GptBlock& b = m.blocks[static_cast<std::size_t>(i)];
    const std::string p = "trf_blocks." + std::to_string(i) + ".";
    auto add = [&](const std::string& name, std::vector<std::int64_t> shape, const float* data) {
      names.push_back(p + name);
      t.push_back({names.back(), std::move(shape), data});
    };
    const char* qkv[] = {"att.W_query", "att.W_key", "att.W_value"};
    for (int k = 0; k < 3; ++k) {
      add(std::string(qkv[k]) + ".weight", {E, E}, b.qkv.weight.data() + k * E * E);
      add(std::string(qkv[k]) + ".bias", {E}, b.qkv.bias.data() + k * E);
    }
    add("att.out_proj.weight", {E, E}, b.proj.weight.data());
    add("att.out_proj.bias", {E}, b.proj.bias.data());
    add("norm1.scale", {E}, b.ln1_weight.data());
    add("norm1.shift", {E}, b.ln1_bias.data());
    add("norm2.scale", {E}, b.ln2_weight.data());
    add("norm2.shift", {E}, b.ln2_bias.data());
    add("ff.layers.0.weight", {4 * E, E}, b.fc.weight.data());
    add("ff.layers.0.bias", {4 * E}, b.fc.bias.data());
    add("ff.layers.2.weight", {E, 4 * E}, b.fc_proj.weight.data());
    add("ff.layers.2.bias", {E}, b.fc_proj.bias.data());
  }
  write_safetensors_f32(dir / "model.safetensors", t);
  nlohmann::json config = {{"vocab_size", V},       {"context_length", P}, {"emb_dim", E},    {"n_heads", c.n_head},
                           {"n_layers", c.n_layer}, {"drop_rate", 0.0},    {"qkv_bias", true}};
  std::ofstream(dir / "config.json") << config.dump();
  for (const char* f : {"vocab.json", "merges.txt"})
    fs::copy_file(kGptModels / "hf_f32" / f, dir / f, fs::copy_options::overwrite_existing);
  return dir;
}

TEST(GptWorker, TheCallerNeverWaitsWhileAForwardRuns) {
  const fs::path dir = write_big_checkpoint();
  GptWorker w;
  w.open(dir);
  w.wait_idle();
  ASSERT_EQ(w.status().error, "");
  std::vector<int> ids(512);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i * 7 % 263);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  w.set_ids(ids);
  // From the request on, the worker is not idle (waiting or computing) until the result is there.
  EXPECT_FALSE(w.status().idle);
  double slowest_call_ms = 0;
  bool saw_computing = false;
  // What a frame loop does: ask for the state, draw, repeat.
  while (true) {
    const auto c0 = Clock::now();
    const GptWorker::Status s = w.status();
    const auto r = w.result();
    slowest_call_ms = std::max(slowest_call_ms, std::chrono::duration<double, std::milli>(Clock::now() - c0).count());
    saw_computing |= s.computing;
    if (r) break;
    EXPECT_FALSE(s.idle);
    ASSERT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 60.0) << "no result";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("forward %.1f ms (worker's own figure %.1f ms); slowest status()+result() %.3f ms\n", total_ms,
              w.result()->forward_ms, slowest_call_ms);
  EXPECT_TRUE(saw_computing);
  w.wait_idle();
  EXPECT_TRUE(w.status().idle);
  EXPECT_LT(slowest_call_ms, 0.25 * w.result()->forward_ms);
  fs::remove_all(dir);
}

// A long pasted text is encoded off the lock the drawing thread takes: status() and result()
// answer while it is encoded (they could not if the worker held the lock meanwhile), and the
// error names the lengths once it is done.
TEST(GptWorker, TheCallerNeverWaitsWhileATextIsEncoded) {
  GptWorker w;
  w.open(kGptModels / "hf_f32");
  const auto first = run_ids(w, kIds);
  std::string text;
  for (int i = 0; text.size() < (8u << 20); ++i) text += " the thin " + std::to_string(i);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  w.set_text(text);
  bool saw_tokenizing = false, held_result = true;
  double slowest_call_ms = 0;
  while (true) {
    const auto c0 = Clock::now();
    const GptWorker::Status s = w.status();
    const auto r = w.result();
    slowest_call_ms = std::max(slowest_call_ms, std::chrono::duration<double, std::milli>(Clock::now() - c0).count());
    saw_tokenizing |= s.tokenizing;
    if (s.tokenizing) held_result &= r == first;  // the last result stays readable meanwhile
    if (!s.error.empty()) break;
    ASSERT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 120.0) << "no answer";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("encoding %.1f ms; slowest status()+result() %.3f ms\n",
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), slowest_call_ms);
  EXPECT_TRUE(saw_tokenizing);
  EXPECT_TRUE(held_result);
  EXPECT_NE(w.status().error.find(" tokens is longer than the model's context of 16"), std::string::npos)
      << w.status().error;
  EXPECT_FALSE(w.status().tokenizing);
}

TEST(GptWorker, CancellingALoadKeepsTheModelThere) {
  const fs::path dir = write_big_checkpoint();
  GptWorker w;
  w.open(kGptModels / "hf_f32");
  w.wait_idle();
  w.open(dir);
  w.cancel_open();
  w.wait_idle();
  EXPECT_EQ(w.loaded()->path, kGptModels / "hf_f32");
  EXPECT_EQ(w.status().error, "");
  EXPECT_FALSE(w.status().loading);
  // A later open of the same file is not affected by the cancel.
  w.open(dir);
  w.wait_idle();
  EXPECT_EQ(w.loaded()->path, dir);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhaviz
