// A training run: the settings, the model and AdamW's state, one step at a time, the head
// detectors on the probe, and the files a run leaves (what `mhaviz train` drives; an app's
// Train view would drive the same object from a worker thread).
//
// Files, for an output MODEL.safetensors (all written atomically, each by temp + rename):
//   MODEL.safetensors  the parameters under the book's GPTModel names (train.hpp), F32, in
//                      model.parameters() order; metadata {"format": "pt", "step": N}
//   config.json        beside it: the book's keys (vocab_size, context_length, emb_dim,
//                      n_heads, n_layers, drop_rate 0, qkv_bias) and "attn_only"; a text
//                      trained by characters adds "char_vocab" (the character of each id)
//   MODEL.adamw        what --resume needs and the model loader never reads (its extension is
//                      not .safetensors): AdamW's exp_avg.NAME and exp_avg_sq.NAME for every
//                      parameter, in safetensors form, with metadata {"format":
//                      "mhaviz-train-state", "version": "1", "step": N, "settings": the run's
//                      settings as JSON, "text_hash"}. The batches need no state: step s's batch
//                      is a function of the seed and s.
//   vocab.json + merges.txt, or tokenizer.json: copied beside the model when the text was
//                      tokenized with GPT-2's tokenizer (a synthetic task's model has none).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mhaviz/heads.hpp"
#include "mhaviz/train.hpp"
#include "mhaviz/train_data.hpp"

namespace mhaviz::train {

struct TrainSettings {
  TaskKind task = TaskKind::Induction;
  std::string text_path, tokenizer_path;  // task text (absolute); tokenizer folder, empty: characters
  GptTrainConfig model;                   // vocab_size comes from the text for the text task
  int batch = 64;
  double lr = 1e-2, weight_decay = 0.1;
  std::uint64_t seed = 123;
};

// Throws TrainError naming the option: sizes (validate_config), --batch, --lr, --weight-decay,
// and the memory a step would take (parameters, gradients, AdamW's moments and every kept
// activation: at most kTrainMemoryLimit).
inline constexpr std::int64_t kTrainMemoryLimit = std::int64_t{4} << 30;
void validate_settings(const TrainSettings& s);
// Bytes a step of these settings holds (the estimate validate_settings checks).
std::int64_t training_bytes(const TrainSettings& s);

// The loss of one batch, before the update: the mean over every position, and over the
// positions whose target lies in the segment's first occurrence / in its copy (induction and
// copy; absent for text).
struct Losses {
  double loss = 0;
  std::optional<double> first, repeat;
};

struct StepStats {
  std::int64_t step = 0;  // 1 for the first
  Losses losses;
};

// Detector scores (heads.hpp) of every head on the probe: [layer][head][pattern], in
// kHeadPatterns order; each the mean over the probe's sequences where the head has a score.
using HeadScores = std::vector<std::vector<std::array<std::optional<float>, kHeadPatternCount>>>;

struct EvalStats {
  std::int64_t step = 0;  // steps done when it was measured
  Losses losses;          // on the probe (induction: the held-out segment lengths)
  HeadScores heads;
};

class Trainer {
 public:
  // A fresh run: parameters from settings.seed as torch initialises them, AdamW's state empty.
  // data must be the settings' task. Throws TrainError for bad settings.
  Trainer(const TrainSettings& settings, TaskData data);

  // A run saved by save(): reads MODEL.safetensors, config.json and MODEL.adamw, and the task's
  // data again (a text must hash as it did). Throws TrainError naming the file and what does
  // not match.
  static Trainer resume(const std::filesystem::path& model_file);

  const TrainSettings& settings() const { return settings_; }
  const TaskData& data() const { return data_; }
  const GptTrainModel& model() const { return model_; }
  const AdamW& optimizer() const { return opt_; }
  std::int64_t steps_done() const { return opt_.step; }

  // One AdamW step on the batch of step steps_done() + 1.
  StepStats step();
  // The probe's losses and every head's detector scores, no update.
  EvalStats evaluate();
  // The batch step `step` trains on (for --dump-batches).
  void batch(std::int64_t step, Batch& out) const;

  // Writes the files above for model_file (which must end in .safetensors).
  void save(const std::filesystem::path& model_file) const;

 private:
  Trainer() = default;
  void ready();  // AdamW's settings, the gradient buffer and the probe, once the model is in place
  TrainSettings settings_;
  TaskData data_;
  GptTrainModel model_;
  AdamW opt_;
  StepWorkspace step_;
  Activations probe_acts_;
  Batch batch_, probe_;
  std::vector<float> grads_;
};

// MODEL.adamw for MODEL.safetensors.
std::filesystem::path optimizer_state_path(const std::filesystem::path& model_file);

}  // namespace mhaviz::train
