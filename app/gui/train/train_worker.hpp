// The Train view's run: the core's Trainer (mhaviz/trainer.hpp) driven one step at a time on
// a worker thread, which publishes what the window reads as immutable snapshots (the curves,
// the probe's attention patterns every few steps, where the checkpoint is), so the window
// keeps drawing at its own rate and never waits for a step. No ImGui here: app_tests drive it.
//
// The checkpoint is the trainer's own files (MODEL.safetensors, config.json, MODEL.adamw) and
// log.jsonl (the curves, as `mhaviz train --log` writes them), each written atomically, on pause, every save_every
// steps, at the last step and when the worker is destroyed (the window closing): a run never loses more than the steps
// since.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "figure/train_figure.hpp"
#include "mhaviz/trainer.hpp"

namespace mhaviz::gui {

// Every head's attention on the probe sequence at one step (the scrubber's snapshots).
struct TrainProbe {
  std::int64_t step = 0;
  std::vector<float> weights;  // (n_layer, n_head, T, T) softmax weights, 0 above the diagonal
  std::vector<float> scores;   // the detectors' scores over the whole probe, as TrainCurves holds them
};

// The loss on the probe (a text run: windows of its text) and on the probe's copy with one
// head's context zeroed before out_proj (its output ablated), against the model as it is, at
// one step.
struct TrainAblation {
  int layer = -1, head = -1;
  std::int64_t step = 0;
  double loss = 0, loss_ablated = 0;                // every position of the probe
  double loss_repeat = 0, loss_repeat_ablated = 0;  // the positions predicting the copy (NaN: none)
};

// What the window reads: made by the worker, never changed once published.
struct TrainSnapshot {
  std::int64_t step = 0;    // steps done
  std::int64_t target = 0;  // the run's steps
  bool running = false;
  figure::TrainCurves curves;
  std::vector<std::shared_ptr<const TrainProbe>> probes;  // oldest first; the last is the newest
  std::vector<int> probe_tokens;                          // the probe sequence's T ids
  std::vector<std::string> probe_names;                   // their names (train_text.hpp's task_token_names)
  std::string checkpoint;                                 // the model file last written; empty: none yet
  std::int64_t saved_step = -1;
  std::string error;  // the last write's failure (the run goes on)
  double tokens_per_s = 0;
  std::optional<TrainAblation> ablation;
};

class TrainWorker {
 public:
  struct Plan {
    train::TrainSettings settings;
    std::int64_t steps = 1000;         // the run's steps
    int eval_every = 25;               // detectors and a probe snapshot every K steps (and at step 0)
    int save_every = 250;              // a checkpoint every N steps
    std::filesystem::path model_file;  // RUN/model.safetensors (its folder is made)
    std::int64_t pause_at = 0;         // > 0: pause after this step (then write the checkpoint)
    int nice = 0;                      // > 0: the worker thread's nice value (the window's frames first)
    bool alone = false;                // the trainer's loops on the worker thread only, never the pool's
                                       // (those run at the window's priority): the other core draws
  };
  // Builds the trainer (throws train::TrainError for bad settings, naming the setting) and starts
  // the thread, paused at step 0 with the untrained heads measured.
  explicit TrainWorker(Plan plan);
  // Stops after the current step, writes the checkpoint when steps were trained since the
  // last, joins.
  ~TrainWorker();
  TrainWorker(const TrainWorker&) = delete;
  TrainWorker& operator=(const TrainWorker&) = delete;

  void run();                        // train on to the plan's steps
  void pause();                      // stop after the current step, then write the checkpoint
  void step();                       // one step, then pause
  void ablate(int layer, int head);  // an ablation of that head at the current parameters
  std::shared_ptr<const TrainSnapshot> snapshot() const;
  std::uint64_t generation() const { return generation_.load(); }  // bumped by every publication
  bool busy() const;                                               // training, or a command not yet done
  const Plan& plan() const { return plan_; }

 private:
  void loop();
  void train_one();
  void measure();  // detectors and the probe's patterns at the current step
  void save();
  void do_ablation(int layer, int head);
  void publish(bool force);

  Plan plan_;
  train::Trainer trainer_;
  // The worker's own copy of what it publishes.
  TrainSnapshot mine_;
  train::Batch probe_;     // the detectors' probe (held-out lengths) and its roles
  train::Batch sequence_;  // the one probe sequence the view shows
  train::Batch ablated_;   // what an ablation is measured on: probe_, or for a text its own windows
  train::Activations acts_;
  double last_publish_ = -1;
  double started_ = 0;
  std::int64_t started_step_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false, running_ = false, save_asked_ = false;
  bool working_ = false;  // a command taken and not yet published
  int steps_asked_ = 0;
  std::optional<std::pair<int, int>> ablate_asked_;
  std::shared_ptr<const TrainSnapshot> published_;
  std::atomic<std::uint64_t> generation_{0};
  std::thread thread_;
};

}  // namespace mhaviz::gui
