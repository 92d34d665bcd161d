// The Train view's worker (app/gui/train/train_worker.hpp), without a window: it trains the
// core's Trainer on its thread and publishes what the view reads; a pause, a finished run and
// its destruction write the checkpoint, which the trainer resumes at the same step with the
// same parameters; the ablation of a head changes the probe's loss.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

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

}  // namespace
}  // namespace mhaviz::gui
