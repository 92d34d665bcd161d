// The Train view's worker (app/gui/train/train_worker.hpp), without a window: it trains the
// core's Trainer on its thread and publishes what the view reads; a pause, a finished run and
// its destruction write the checkpoint, which the trainer resumes at the same step with the
// same parameters; the ablation of a head changes the probe's loss; the text task's file
// checked before Start, and a text run shown on its own text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "train_text.hpp"
#include "train_worker.hpp"

namespace mhaviz::gui {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("mhaviz-train-worker-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TrainWorker::Plan small_plan(const fs::path& dir, std::int64_t steps) {
  TrainWorker::Plan p;
  p.settings.model.n_layers = 2;
  p.settings.model.n_heads = 2;
  p.settings.model.emb_dim = 16;
  p.settings.model.context_length = 16;
  p.settings.batch = 8;
  p.steps = steps;
  p.eval_every = 5;
  p.save_every = 0;
  p.model_file = dir / "run" / "model.safetensors";
  return p;
}

// Waits for the worker to be idle (a generous bound: a made-slow machine).
std::shared_ptr<const TrainSnapshot> settled(const TrainWorker& w) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (w.busy() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_FALSE(w.busy());
  return w.snapshot();
}

TEST(TrainWorker, StartsPausedWithTheUntrainedHeadsMeasured) {
  TempDir d;
  TrainWorker w(small_plan(d.path, 20));
  const auto s = w.snapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, 0);
  EXPECT_FALSE(s->running);
  ASSERT_EQ(s->probes.size(), 1u);
  EXPECT_EQ(s->probes[0]->weights.size(), 2u * 2u * 16u * 16u);
  EXPECT_EQ(s->probe_tokens.size(), 16u);
  EXPECT_TRUE(s->checkpoint.empty());
  EXPECT_FALSE(fs::exists(d.path / "run" / "model.safetensors"));
}

TEST(TrainWorker, RunsToItsStepsAndWritesTheCheckpointTheTrainerResumes) {
  TempDir d;
  TrainWorker w(small_plan(d.path, 20));
  w.run();
  const auto s = settled(w);
  EXPECT_EQ(s->step, 20);
  EXPECT_FALSE(s->running);
  EXPECT_EQ(s->curves.steps.size(), 20u);
  EXPECT_EQ(s->curves.eval_steps, (std::vector<std::int64_t>{0, 5, 10, 15, 20}));
  EXPECT_EQ(s->probes.size(), 5u);
  EXPECT_EQ(s->saved_step, 20);
  ASSERT_EQ(s->checkpoint, (d.path / "run" / "model.safetensors").string());
  // The same step with the same bits as a run of the trainer alone.
  const train::Trainer back = train::Trainer::resume(s->checkpoint);
  EXPECT_EQ(back.steps_done(), 20);
  train::Trainer alone(small_plan(d.path, 20).settings, train::synthetic_task(train::TaskKind::Induction, 64, 16));
  for (int k = 0; k < 20; ++k) {
    const train::StepStats st = alone.step();
    EXPECT_FLOAT_EQ(static_cast<float>(st.losses.loss), s->curves.loss[static_cast<std::size_t>(k)]) << k;
  }
  EXPECT_EQ(back.model().params, alone.model().params);
}

TEST(TrainWorker, StepThenPauseWritesTheCheckpointAndDestructionTheStepsSince) {
  TempDir d;
  std::string file;
  {
    TrainWorker w(small_plan(d.path, 100));
    w.step();
    w.step();
    auto s = settled(w);
    EXPECT_EQ(s->step, 2);
    EXPECT_EQ(s->saved_step, 2);  // a step pauses, and a pause writes
    file = s->checkpoint;
    w.run();
    while (w.snapshot()->step < 7) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    w.pause();
    s = settled(w);
    EXPECT_FALSE(s->running);
    EXPECT_GE(s->step, 7);
    EXPECT_EQ(s->saved_step, s->step);
    // Training on past the checkpoint, then the window closes.
    w.step();
    settled(w);
  }
  EXPECT_GE(train::Trainer::resume(file).steps_done(), 8);
}

TEST(TrainWorker, AblatingAHeadChangesTheProbeLoss) {
  TempDir d;
  TrainWorker w(small_plan(d.path, 10));
  w.run();
  settled(w);
  w.ablate(1, 0);
  const auto s = settled(w);
  ASSERT_TRUE(s->ablation);
  EXPECT_EQ(s->ablation->layer, 1);
  EXPECT_EQ(s->ablation->step, 10);
  EXPECT_TRUE(std::isfinite(s->ablation->loss_repeat));
  EXPECT_NE(s->ablation->loss_ablated, s->ablation->loss);
}

TEST(TrainWorker, RefusesBadSettingsNamingThem) {
  TempDir d;
  TrainWorker::Plan p = small_plan(d.path, 10);
  p.settings.model.emb_dim = 15;
  try {
    TrainWorker w(p);
    FAIL() << "15 wide with 2 heads was accepted";
  } catch (const train::TrainError& e) {
    EXPECT_NE(std::string(e.what()).find("--heads"), std::string::npos) << e.what();
  }
}

// [SECTION] The text task
void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string story() {
  std::string s;
  for (int k = 0; k < 12; ++k) s += "Once upon a time a small model read a story, line " + std::to_string(k) + ".\n";
  return s;
}

// Each file the view refuses gives one line naming the file and the reason; a good one its
// size; Start waits for it.
TEST(TrainText, EveryBadFileIsOneLineNamingItAndWhy) {
  TempDir d;
  const auto check = [&](const std::string& name, const std::string& bytes) {
    const fs::path p = d.path / name;
    write(p, bytes);
    return check_train_text(p.string(), "", 16, 8);
  };
  const auto says = [](const TextCheck& c, const std::string& file, const std::string& why) {
    EXPECT_NE(c.error.find(file), std::string::npos) << c.error;
    EXPECT_NE(c.error.find(why), std::string::npos) << c.error;
    EXPECT_EQ(c.error.find('\n'), std::string::npos) << c.error;
    EXPECT_EQ(c.error.find("--"), std::string::npos) << "the view has no options: " << c.error;
  };
  says(check("empty.txt", ""), "empty.txt", "is empty");
  says(check("nul.bin", std::string("ab\0cd", 5)), "nul.bin", "is not text");
  says(check("latin1.txt", "caf\xE9 au lait"), "latin1.txt", "is not UTF-8");
  says(check("short.txt", "too short"), "short.txt", "too few for one batch");
  says(check_train_text((d.path / "missing.txt").string(), "", 16, 8), "missing.txt", "cannot read");
  says(check_train_text(d.path.string(), "", 16, 8), d.path.string(), "is a folder");
  EXPECT_EQ(check_train_text("", "", 16, 8).error, "text: choose a text file");
  const TextCheck ok = check("story.txt", story());
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.tokens, static_cast<std::int64_t>(story().size()));
  EXPECT_TRUE(ok.characters);
  EXPECT_FALSE(has_tokenizer_files(d.path.string()));
}

// A text run: the vocabulary is the text's, the heads are shown on the start of the text (its
// characters named, white space visible), the ablation is measured on the text, and the loss
// has no halves (the text has no segment and copy).
TEST(TrainText, ATextRunShowsItsOwnTextAndItsOverallLoss) {
  TempDir d;
  write(d.path / "story.txt", story());
  TrainWorker::Plan p = small_plan(d.path, 6);
  p.settings.task = train::TaskKind::Text;
  p.settings.text_path = (d.path / "story.txt").string();
  TrainWorker w(p);
  const train::TaskData data = train::text_task(p.settings.text_path, "", 16, 8);
  EXPECT_EQ(w.plan().settings.model.vocab_size, data.vocab_size);
  w.run();
  const auto s = settled(w);
  EXPECT_EQ(s->curves.vocab, data.vocab_size);
  EXPECT_EQ(s->probe_tokens, std::vector<int>(data.text.begin(), data.text.begin() + 16));
  ASSERT_EQ(s->probe_names.size(), 16u);
  EXPECT_EQ(s->probe_names[0], "O");
  EXPECT_EQ(s->probe_names[4], "\xE2\x90\xA3");  // "Once " : the space made visible
  for (const float v : s->curves.loss_repeat) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(std::isfinite(s->curves.loss.back()));
  w.ablate(0, 1);
  const auto a = settled(w);
  ASSERT_TRUE(a->ablation);
  EXPECT_TRUE(std::isnan(a->ablation->loss_repeat));
  // The loss on windows of the text, as the trainer's own forward gives it.
  EXPECT_TRUE(std::isfinite(a->ablation->loss));
  EXPECT_NE(a->ablation->loss_ablated, a->ablation->loss);
}

}  // namespace
}  // namespace mhaviz::gui
