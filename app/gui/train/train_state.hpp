// The Train view's state: the settings of the next run (the controls offer valid choices
// only), the run (a TrainWorker), the snapshot the window last took from it, and what the
// view shows of it (the scrubber's snapshot, the detector, the head selected for ablation).
// Like the model view's, nothing here is part of the lesson document.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "train_text.hpp"
#include "train_worker.hpp"

namespace mhaviz::gui {

struct TrainUi {
  // The next run's settings (Reset keeps them; they are fixed while a run exists).
  int task = 0;  // 0 induction, 1 copy, 2 text
  // The text task: the file, and GPT-2's tokenizer (a folder with its files) or characters;
  // checked as the trainer reads it whenever one of them, the context or the batch changes
  // (Start waits for a file that passes).
  std::string text_path, tokenizer_dir;
  bool tokenizer_offered = false;  // the model view's folder was put in tokenizer_dir (once)
  bool gpt2_tokens = false;
  std::string text_checked;  // what `text` was checked for
  TextCheck text;
  int layers = 2, heads = 4, d_model = 64, context = 32, batch = 64;
  bool attn_only = true;
  double lr = 1e-2, weight_decay = 0.1;
  int steps = 1000;
  int seed = 123;
  std::string error;  // the settings the trainer refused, or the run folder not made

  std::unique_ptr<TrainWorker> worker;        // the run; none before Start and after Reset
  std::shared_ptr<const TrainSnapshot> snap;  // what the view shows (taken once a frame)
  std::uint64_t seen = 0;                     // the worker's generation snap is of
  std::uint64_t data = 0;                     // bumped when what the figure shows changes
  std::int64_t until = 0;                     // --train-until: pause at this step (0: no)

  int scrub = -1;             // the probe snapshot shown, an index into snap->probes; -1: the newest
  int pattern = 3;            // the detector whose scores the heads' grid prints (kHeadPatterns: induction)
  int layer = -1, head = -1;  // the head selected (clicked in the grid): large, and to ablate
  int hover_k = -1;           // the thumbnail under the pointer this frame
};

}  // namespace mhaviz::gui
