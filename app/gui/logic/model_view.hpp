// What the app's model view shows of a trained GPT's forward, computed away from the drawing
// code (no GL, GLFW or ImGui; tested in-process) and off the drawing thread: the text box's
// tokens, the model view's figure (figure/model_figure.cpp, the one `mhaviz render --view
// model` draws) with its pooled thumbnails, a head detector's scores and top five, and the
// next-token predictions at a position.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "figure/figure.hpp"
#include "figure/interv_figures.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/gpt_worker.hpp"
#include "mhaviz/heads.hpp"
#include "mhaviz/prompt.hpp"

namespace mhaviz::gui {

// The text box as the model will see it: its tokens as the tokenizer spells them ("␣world",
// "▁world", "\n"), with the special tokens o asks for (<|endoftext|> first, tokenizer.json's
// template), and the error the worker will give for it (empty text, or "text: 20 tokens is
// longer than the model's context of 16": both lengths).
struct TextTokens {
  std::vector<std::string> tokens;
  std::string error;
};
TextTokens tokenize_for_display(const Tokenizer& tok, std::string_view text, PromptOptions o, int n_ctx);

struct NextRow {
  int id = 0;
  std::string token;  // display form
  float p = 0;
  double logp = 0;    // natural log of p
  float clean_p = 0;  // with heads ablated: this token's p in the clean run (else p)
};

// Next-token probabilities as percentages with enough digits to tell them apart: two
// significant digits at least ("45.3%", "3.14%", "0.030%", "3.1e-07%"), more where two
// different probabilities of the list would otherwise print alike.
std::vector<std::string> percent_texts(const std::vector<float>& p);

// What derive_model_view depends on: a new forward, detector, position, selected head or
// figure (canvas, typography, theme, colours) gives a new view.
struct ModelViewKey {
  std::uint64_t generation = 0;  // GptWorker::Result::generation
  int pattern = -1;              // index into kHeadPatterns, -1: no detector
  int position = -1;             // next token after this position (-1: the last)
  int layer = -1, head = -1;     // the head shown large (-1: none)
  // Heads ablated (gpt_interventions.hpp): the view shows that run, next tokens and loss
  // with their change from the clean run. Norm-weighted: α·‖f(x)‖ drawn instead of α.
  std::vector<HeadIndex> ablate;
  AblationMode ablation_mode = AblationMode::Zero;
  bool norm_weighted = false;
  bool lens = false;       // the logit lens table of the run shown is wanted
  int lens_target = -1;    // with lens: a token ranked after each layer (-1: none)
  int lens_position = -1;  // at this position (-1: the last)
  figure::Options fig;     // the figure's options: canvas, typography, theme, colours
  bool operator==(const ModelViewKey&) const = default;
};

struct ModelViewData {
  ModelViewKey key;
  std::shared_ptr<const GptWorker::Result> result;  // the forward shown (view points into its trace)
  int n_layer = 0, n_head = 0, tokens = 0;
  std::vector<int> ids;                    // T token ids
  std::vector<std::string> token_strings;  // T display strings
  // The model view figure::build_model_figure draws: weights, tokens, title, caption, the
  // detector's scores (layer-major, NaN: no score; empty: no detector), the selected head.
  // Its thumbs pointer is left null: it would point into this object.
  figure::ModelView view;
  figure::ModelThumbnails thumbs;       // n_layer * n_head thumbnails, layer-major, pooled as the figure chooses
  figure::Figure figure;                // the model view on key.fig's canvas
  std::vector<int> top;                 // the top five heads (layer * n_head + head), highest first
  int position = 0;                     // the position predicted from (0..T-1)
  std::vector<NextRow> next;            // the top five next tokens there
  std::vector<std::string> next_shown;  // their probabilities as printed (percent_texts)
  // With heads ablated: the run shown (the weights the view points into) and the loss on the
  // text (mean −log p of each next token, nats) of it and of the clean run; else null, NaN.
  std::shared_ptr<const GptTrace> ablated;
  std::shared_ptr<const HfTrace> hf_ablated;  // the same for a Qwen, Llama or Gemma model
  bool has_ablation() const { return ablated || hf_ablated; }
  double loss = std::numeric_limits<double>::quiet_NaN(), clean_loss = std::numeric_limits<double>::quiet_NaN();
  // Norm-weighted: the (1, H, T, T) tensors the view points into, one per layer.
  std::shared_ptr<const std::vector<Tensor>> norm_weights;
  // With key.lens: the logit lens of the run shown (top token and its probability at every
  // layer and position), the grid `mhaviz render --view lens` draws; else null.
  std::shared_ptr<const figure::GridView> lens;
  // With key.lens_target: the position it is ranked at, and its rank (0 = the most likely) and
  // probability there after each layer (n_layer each), as the table's side column prints them.
  int lens_position = -1;
  std::vector<int> lens_rank;
  std::vector<float> lens_p;
};

// Mean over positions 0 .. T-2 of −log p(ids[i + 1]) from tr's logits (the LM head on every
// row): the loss the model has on its own text, in nats. NaN for one token.
double text_loss(const GptModel& m, const GptTrace& tr);
double text_loss(const HfModel& m, const HfTrace& tr);

// r: a published forward. The figure for key (its thumbnails pooled as it chooses for the
// canvas); the detector's scores when key.pattern >= 0; next tokens after key.position
// clamped to [0, T) (-1: T - 1). What `prev` (the view shown, or null) computed for the same
// forward is reused: a new selection or canvas does not score or pool again.
std::shared_ptr<const ModelViewData> derive_model_view(std::shared_ptr<const GptWorker::Result> r,
                                                       const ModelViewKey& key,
                                                       std::shared_ptr<const ModelViewData> prev);
// The figure of d on another canvas or theme (a capture: o is the screen's options made a
// capture's), from d's thumbnails when the pooling is the same.
figure::Figure model_figure_for(const ModelViewData& d, const figure::Options& o);

// "2.3" for head k of a model with n_head heads.
std::string head_label(int k, int n_head);

}  // namespace mhaviz::gui
