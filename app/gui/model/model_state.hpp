// A trained GPT in the app: kept apart from the lesson document (opening a model or typing
// its text is not a session edit; nothing here is autosaved or undone). Its figure is drawn
// as the Renderer's `model` ScreenFigure (app_state.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "mhaviz/gpt_worker.hpp"
#include "model_sweep.hpp"
#include "model_view.hpp"

namespace mhaviz::gui {

struct ModelUi {
  std::unique_ptr<GptWorker> worker;  // made by the first open; loads and forwards run on it
  std::string path;                   // the model shown (as opened); empty: none yet
  std::string text;                   // the text box
  bool prepend_eot = false;           // <|endoftext|> first (TransformerLens's habit)
  bool no_special = false;            // without the special tokens tokenizer.json's template adds (<bos>)
  bool requested = false;             // the worker has had a text or ids to run
  bool induction_probe = false;       // running the induction probe instead of the text
  int layer = -1, head = -1;          // the selected head (the big heatmap); -1: none
  int pattern = -1;                   // detector (index into kHeadPatterns); -1: none
  int position = -1;                  // next-token position; -1: the last token
  // Heads ablated (Ctrl- or Shift-click a thumbnail), how, and the norm-weighted toggle.
  std::vector<HeadIndex> ablate;
  AblationMode ablation_mode = AblationMode::Zero;
  bool norm_weighted = false;
  // What the centre shows: every head, the last sweep's grid, or the logit lens table.
  enum class Show { Heads, Sweep, Lens };
  Show show = Show::Heads;
  // The ablation sweep or patching grid (model_sweep.hpp): the tokens typed for its target and vs (empty: the
  // text's last token, a log-probability), the sweep running, and its last grid.
  std::string sweep_target, sweep_vs;
  std::string corrupt_text;             // activation patching: the corrupted text (as many tokens as the text)
  PatchPer patch_per = PatchPer::Head;  // what Patch patches: each head, or each layer's residual at each position
  // The logit lens's ranked token (typed as the sweep's target is) and the position it is
  // ranked at (a column of the table clicked; -1: the last).
  std::string lens_token;
  int lens_position = -1;
  std::unique_ptr<SweepJob> sweep_job;
  std::shared_ptr<const SweepData> sweep;
  int hover_k = -1;       // thumbnail under the pointer this frame
  std::string hover_big;  // the large head's cell under the pointer ("query 3 -> key 1"), this frame
  // File → Open model…
  bool open_dialog = false, open_dialog_just_opened = false;
  std::string open_edit;
  // The text box's tokens, cached on what they depend on.
  std::string tokens_text;
  bool tokens_eot = false, tokens_no_special = false;
  const Tokenizer* tokens_tok = nullptr;
  TextTokens tokens;
  // The last load or forward error the app was told of (shown until the next success).
  std::string error;
  std::uint64_t seen_generation = 0;
  // Derived view (model_view.hpp): the figure and what the panels print, computed on a
  // std::async thread from the published result and the figure's options of last frame.
  std::shared_ptr<const GptWorker::Result> result;  // the result `view` was derived from
  std::shared_ptr<const ModelViewData> view;
  std::future<std::shared_ptr<const ModelViewData>> deriving;
  ModelViewKey deriving_key;   // the last key derived (or being derived)
  bool derive_failed = false;  // for deriving_key (its error was shown)
  figure::Options fig;         // the screen figure's options (canvas, typography, theme) last frame
  bool fig_known = false;
  std::int64_t drawn_frame = -1;  // the frame that last drew the model view
  std::string waiting;            // what the view said in place of a figure in that frame ("": a figure)
  // Responsiveness while the worker loads or computes (state dump): frames drawn meanwhile
  // and the longest gap between two of them.
  std::int64_t busy_frames = 0;
  double busy_max_gap_ms = 0;
  std::chrono::steady_clock::time_point last_poll{};
  // From an edit of the text box to the first frame showing its tokens' view (state dump).
  std::chrono::steady_clock::time_point edit_at{};
  bool edit_pending = false;
  struct Update {
    double ms = 0;             // from the edit to the frame that shows it
    double forward_ms = 0;     // the worker's forward for it
    int from = 0, tokens = 0;  // rows recomputed: from .. tokens - 1
  };
  std::vector<Update> updates;  // the last 64
};

}  // namespace mhaviz::gui
