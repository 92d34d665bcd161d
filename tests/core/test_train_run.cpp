// A training run's pieces: the tasks' batches and probe, the detectors, the files a run writes
// (read back by --resume to the bit, and by the project's model loader), and a run that learns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "mhaviz/gpt.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/prompt.hpp"
#include "mhaviz/safetensors.hpp"
#include "mhaviz/tokenizer.hpp"
#include "mhaviz/trainer.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using train::Batch;
using train::TaskData;
using train::TaskKind;

// A fresh folder under the system's temporary one, removed when the test ends.
class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() /
              ("mhaviz-train-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// [SECTION] tasks

// The segment of one induction sequence: its length (tokens occurring twice), -1 when the
// sequence breaks the task's rules (a token three times, or no repeat).
int repeated_length(const std::int32_t* seq, int n) {
  std::map<std::int32_t, int> count;
  for (int i = 0; i < n; ++i) ++count[seq[i]];
  int twice = 0;
  for (const auto& [id, c] : count) {
    if (c > 2) return -1;
    twice += c == 2;
  }
  return twice > 0 ? twice : -1;
}

TEST(TrainTasks, InductionBatchesRepeatOneSegmentOfATrainedLengthAndNothingElse) {
  const TaskData d = train::synthetic_task(TaskKind::Induction, 64, 32);
  const train::SegmentLengths lengths = train::induction_lengths(32);
  EXPECT_EQ(lengths.held_out, (std::vector<int>{5, 9, 13}));
  EXPECT_EQ(lengths.trained, (std::vector<int>{4, 6, 7, 8, 10, 11, 12, 14, 15, 16}));
  std::set<int> seen_lengths, seen_offsets;
  Batch b;
  for (int step = 1; step <= 20; ++step) {
    train::make_batch(d, 1, step, 64, 32, b);
    for (int s = 0; s < 64; ++s) {
      const std::int32_t* seq = b.tokens.data() + s * 33;
      const int n = repeated_length(seq, 33);
      ASSERT_GT(n, 0) << "step " << step << " sequence " << s;
      seen_lengths.insert(n);
      // Roles: n - 1 targets in each occurrence, first before repeat.
      const std::uint8_t* roles = b.roles.data() + s * 32;
      EXPECT_EQ(std::count(roles, roles + 32, train::kFirst), n - 1);
      EXPECT_EQ(std::count(roles, roles + 32, train::kRepeat), n - 1);
      const auto first = std::find(roles, roles + 32, train::kFirst) - roles;
      seen_offsets.insert(static_cast<int>(first));
      // A repeat target is the token after the same token's first occurrence.
      for (int t = 0; t < 32; ++t)
        if (roles[t] == train::kRepeat) {
          const auto earlier = std::find(seq, seq + t, seq[t]) - seq;
          ASSERT_LT(earlier, t);
          EXPECT_EQ(seq[earlier + 1], seq[t + 1]);
        }
    }
  }
  EXPECT_EQ(seen_lengths, std::set<int>(lengths.trained.begin(), lengths.trained.end()));
  EXPECT_GT(seen_offsets.size(), 10u);  // the copy starts at many offsets
}

TEST(TrainTasks, BatchesAreAFunctionOfSeedAndStepAndTheProbeHoldsTheHeldOutLengths) {
  const TaskData d = train::synthetic_task(TaskKind::Induction, 64, 32);
  Batch a, b, c;
  train::make_batch(d, 3, 17, 8, 32, a);
  train::make_batch(d, 3, 18, 8, 32, c);
  train::make_batch(d, 3, 17, 8, 32, b);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, c.tokens);
  train::make_batch(d, 4, 17, 8, 32, c);
  EXPECT_NE(a.tokens, c.tokens);
  const Batch probe = train::make_probe(d, 32);
  ASSERT_EQ(probe.B, 24);
  const int held_out[] = {5, 9, 13};
  for (int s = 0; s < probe.B; ++s) EXPECT_EQ(repeated_length(probe.tokens.data() + s * 33, 33), held_out[s / 8]);
}

TEST(TrainTasks, CopyRepeatsItsFirstHalf) {
  const TaskData d = train::synthetic_task(TaskKind::Copy, 10, 16);  // 17 tokens: one extra, then 8 and 8
  Batch b;
  train::make_batch(d, 1, 1, 4, 16, b);
  for (int s = 0; s < 4; ++s) {
    const std::int32_t* seq = b.tokens.data() + s * 17;
    EXPECT_TRUE(std::equal(seq + 1, seq + 9, seq + 9));
    EXPECT_EQ(std::count(b.roles.begin() + s * 16, b.roles.begin() + (s + 1) * 16, train::kRepeat), 7);
  }
}

TEST(TrainTasks, TooSmallForTheInductionTaskSaysWhy) {
  EXPECT_THROW(train::synthetic_task(TaskKind::Induction, 64, 10), train::TrainError);
  EXPECT_THROW(train::synthetic_task(TaskKind::Induction, 28, 32), train::TrainError);
  EXPECT_NO_THROW(train::synthetic_task(TaskKind::Induction, 29, 32));
}

// [SECTION] files

train::TrainSettings small_settings(bool attn_only) {
  train::TrainSettings s;
  s.model.n_layers = 2;
  s.model.n_heads = 2;
  s.model.emb_dim = 16;
  s.model.context_length = 16;
  s.model.vocab_size = 24;
  s.model.attn_only = attn_only;
  s.model.qkv_bias = !attn_only;
  s.batch = 8;
  s.seed = 9;
  return s;
}

train::Trainer small_trainer(bool attn_only) {
  const train::TrainSettings s = small_settings(attn_only);
  return train::Trainer(s, train::synthetic_task(TaskKind::Induction, 24, 16));
}

TEST(TrainFiles, ResumeReadsBackTheBitsAndContinuesAsAnUninterruptedRun) {
  TempDir dir;
  train::Trainer straight = small_trainer(false), stopped = small_trainer(false);
  for (int i = 0; i < 10; ++i) straight.step();
  for (int i = 0; i < 4; ++i) stopped.step();
  stopped.save(dir.path() / "m.safetensors");
  train::Trainer resumed = train::Trainer::resume(dir.path() / "m.safetensors");
  EXPECT_EQ(resumed.steps_done(), 4);
  EXPECT_EQ(resumed.model().params, stopped.model().params);
  EXPECT_EQ(resumed.optimizer().exp_avg_sq, stopped.optimizer().exp_avg_sq);
  for (int i = 0; i < 6; ++i) resumed.step();
  EXPECT_EQ(resumed.model().params, straight.model().params);
  EXPECT_EQ(resumed.optimizer().exp_avg, straight.optimizer().exp_avg);
}

// Saves a trainer of that family after 3 steps, loads it with the project's model loader and
// checks its forward (and the loop oracle) against the trainer's logits at the last position.
void loader_forward_is_the_trainers(bool attn_only) {
  TempDir dir;
  train::Trainer t = small_trainer(attn_only);
  for (int i = 0; i < 3; ++i) t.step();
  t.save(dir.path() / "model.safetensors");
  GptModel g = load_gpt(dir.path());
  EXPECT_EQ(g.layout, GptLayout::Book);
  EXPECT_EQ(g.config.attn_only, attn_only);
  EXPECT_EQ(g.parameter_count(), t.model().parameter_count());
  prepare_gpt_forward(g);
  Batch b;
  t.batch(1, b);
  train::Activations acts;
  train::forward(t.model(), std::span<const std::int32_t>(b.tokens.data(), 17), 1, acts);
  const std::vector<int> ids(b.tokens.begin(), b.tokens.begin() + 16);
  const GptTrace tr = gpt_forward(g, ids);
  const GptTrace ref = gpt_forward_reference(g, ids);
  for (int v = 0; v < 24; ++v) {
    const float want = acts.logits[static_cast<std::size_t>(15 * 24 + v)];
    EXPECT_NEAR(tr.logits_last.data[static_cast<std::size_t>(v)], want, 1e-5) << "logit " << v;
    EXPECT_NEAR(ref.logits_last.data[static_cast<std::size_t>(v)], want, 1e-5) << "oracle's logit " << v;
  }
  // A synthetic task's model has no tokenizer files: its tokens are ids, written as numbers.
  const Tokenizer tok = Tokenizer::from_folder(dir.path());
  EXPECT_EQ(tok.encode("3 17 0"), (std::vector<int>{3, 17, 0}));
  EXPECT_EQ(tok.display_token(17), "17");
  EXPECT_EQ(tok.refuse("3 x"),
            "\"x\" is not a token of this model: its tokens are the numbers 0 to 23, separated by spaces (it was "
            "trained on a synthetic task)");
  EXPECT_EQ(encode_prompt(tok, "3 99", {}, {g.config.n_ctx, g.config.vocab_size}).error,
            "text: \"99\" is not a token of this model: its tokens are the numbers 0 to 23, separated by spaces (it "
            "was trained on a synthetic task)");
}

TEST(TrainFiles, TheBooksLoaderReadsAFullCheckpointAndItsForwardIsTheTrainers) {
  loader_forward_is_the_trainers(false);
}

TEST(TrainFiles, TheLoaderReadsAnAttentionOnlyCheckpointAndItsForwardIsTheTrainers) {
  loader_forward_is_the_trainers(true);
}

TEST(TrainFiles, ACharacterModelsVocabularyComesFromItsConfig) {
  const Tokenizer tok = Tokenizer::from_characters({"a", "b", " ", "\xc3\xa9"}, "config.json");
  EXPECT_EQ(tok.encode("ab \xc3\xa9"
                       "a"),
            (std::vector<int>{0, 1, 2, 3, 0}));
  EXPECT_EQ(tok.decode({3, 2, 1}), "\xc3\xa9 b");
  EXPECT_EQ(tok.refuse("abc"), "\"c\" is not one of this model's 4 characters");
  EXPECT_EQ(tok.refuse("ab"), "");
  EXPECT_THROW(Tokenizer::from_characters({"a", "a"}, "config.json"), LoadError);
  EXPECT_THROW(Tokenizer::from_characters({"ab"}, "config.json"), LoadError);
}

// [SECTION] a run that learns

TEST(TrainRun, TheCopyTaskIsLearnedAndTheDetectorsSeeIt) {
  // A 1-layer model copies the second half within a few hundred steps (a fixed distance:
  // positional attention suffices); its head then looks back half a sequence.
  train::TrainSettings s = small_settings(true);
  s.task = TaskKind::Copy;
  s.model.n_layers = 1;
  s.model.vocab_size = 12;
  s.batch = 32;
  train::Trainer t(s, train::synthetic_task(TaskKind::Copy, 12, 16));
  const train::EvalStats before = t.evaluate();
  train::StepStats last;
  for (int i = 0; i < 300; ++i) last = t.step();
  const train::EvalStats after = t.evaluate();
  ASSERT_TRUE(last.losses.repeat && last.losses.first);
  EXPECT_LT(*last.losses.repeat, 0.2 * *last.losses.first);
  EXPECT_LT(*after.losses.repeat, 0.2 * *before.losses.repeat);
  ASSERT_EQ(after.heads.size(), 1u);
  ASSERT_EQ(after.heads[0].size(), 2u);
  for (const auto& head : after.heads[0])
    for (const auto& score : head) {
      ASSERT_TRUE(score.has_value());
      EXPECT_GE(*score, 0.0f);
      EXPECT_LE(*score, 1.0f);
    }
}

}  // namespace
}  // namespace mhaviz
