// The ablation sweep of the app's model view (ablation_sweep of gpt_interventions.hpp or hf_interventions.hpp over
// every head), run on a thread of its own so the window keeps drawing: its progress, Cancel,
// and the layers × heads grid it ends with (figure/interv_figures.hpp's sweep_view, the
// figure `mhaviz render --view sweep` draws). No GL, GLFW or ImGui; tested in-process.
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "figure/interv_figures.hpp"
#include "mhaviz/gpt_worker.hpp"

namespace mhaviz::gui {

// What a sweep judges and on which tokens. A typed target (and vs) is judged at the text's
// last position; none typed: the text's own last token, judged from the position before it
// (the sweep runs on the text without it), so "... gave a drink to Mary" asks which heads
// make " Mary" likely. error (one line naming the field) when a typed token is not one
// token, or the text is one token with no target typed.
struct SweepTarget {
  std::vector<int> ids;  // the tokens swept
  TokenMetric metric;
  std::string error;
  // Activation patching: the corrupted text's tokens (as many as ids, cut the same way); each
  // head's context (PatchPer::Head), or the residual after each layer at each position
  // (PatchPer::LayerPosition), is patched from the run on ids into the run on these. Empty:
  // ablation.
  std::vector<int> corrupt;
  PatchPer per = PatchPer::Head;
};
SweepTarget sweep_target(const Tokenizer& tok, const std::vector<int>& text_ids, const std::string& target,
                         const std::string& vs);
// The same for patching the text's run (clean) into corrupt_ids' (the corrupted text), per
// head or per layer × position: error "corrupted text: 9 tokens, the text has 8 (patching needs
// equally many)" when the counts differ.
SweepTarget patch_target(const Tokenizer& tok, const std::vector<int>& text_ids, const std::vector<int>& corrupt_ids,
                         const std::string& target, const std::string& vs, PatchPer per = PatchPer::Head);
// The id of `text` typed as one token of tok, or -1 with error "FIELD: ' Mary' is 2 tokens, not
// one token of the vocabulary" (the sweep's target and vs, the lens's token).
int typed_token(const Tokenizer& tok, const std::string& text, const char* field, std::string& error);

struct SweepData {
  SweepTarget target;
  AblationMode mode = AblationMode::Zero;
  // The text box's tokens when it started: a grid of another text is not shown (the text
  // edited since, the grid is dropped and Sweep or Patch runs again).
  std::vector<int> text_ids;
  // (n_layer, n_head): change of the metric with that head ablated alone, or (patching) the
  // effect of patching it, 1 = the clean metric restored, 0 = none; patching per layer ×
  // position: (n_layer, T), the residual after layer l at position t patched.
  InterventionGrid grid;
  figure::GridView view;  // the figure's grid, as render --view sweep | patch --per ... builds it
  bool patching() const { return !target.corrupt.empty(); }
  bool per_position() const { return patching() && target.per == PatchPer::LayerPosition; }
};

// One sweep on its own thread from construction; the destructor cancels it and waits.
// after_run, when given, is called on that thread after each run (a head, or a layer and a
// position; before Cancel is looked at), with the count done.
class SweepJob {
 public:
  SweepJob(std::shared_ptr<const GptWorker::Result> r, SweepTarget target, AblationMode mode,
           std::function<void(int)> after_run = {});
  ~SweepJob();
  SweepJob(const SweepJob&) = delete;
  SweepJob& operator=(const SweepJob&) = delete;

  void cancel() { cancel_ = true; }
  bool cancelling() const { return cancel_; }
  int done() const { return done_; }
  int total() const { return total_; }
  bool per_position() const { return per_position_; }             // patching per layer × position: total counts those
  const std::vector<int>& text_ids() const { return text_ids_; }  // the text box's tokens it started on
  bool finished() const;
  // Once finished: the grid, or null when cancelled; rethrows what the sweep threw.
  std::shared_ptr<const SweepData> take();

 private:
  std::atomic<int> done_{0}, total_{0};
  std::atomic<bool> cancel_{false};
  bool per_position_ = false;
  std::vector<int> text_ids_;
  std::future<std::shared_ptr<const SweepData>> future_;
};

}  // namespace mhaviz::gui
