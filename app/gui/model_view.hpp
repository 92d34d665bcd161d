// What the app's model view shows of a trained GPT's forward, computed away from the drawing
// code (no GL, GLFW or ImGui; tested in-process): the text box's tokens, every head's
// thumbnail pooled as `mhaviz render --view model` pools it, a head detector's scores and top
// five, and the next-token predictions at a position.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "figure/figure.hpp"
#include "mhaviz/gpt_worker.hpp"
#include "mhaviz/heads.hpp"

namespace mhaviz::gui {

// The text box as the model will see it: GPT-2's tokens for display ("␣world"), with
// <|endoftext|> first when asked, and the error the worker will give for it (empty text,
// or "text: 20 tokens is longer than the model's context of 16": both lengths).
struct TextTokens {
  std::vector<std::string> tokens;
  std::string error;
};
TextTokens tokenize_for_display(const Tokenizer& tok, std::string_view text, bool prepend_eot, int n_ctx);

struct NextRow {
  int id = 0;
  std::string token;  // display form
  float p = 0;
};

// What derive_model_view depends on: a new forward, another thumbnail size, detector,
// position or colour scale gives a new view.
struct ModelViewKey {
  std::uint64_t generation = 0;  // GptWorker::Result::generation
  int f = 1;                     // thumbnail block size (figure::thumbnail_factor)
  int pattern = -1;              // index into kHeadPatterns, -1: no detector
  int position = -1;             // next token after this position (-1: the last)
  figure::Colormap cmap = figure::Colormap::Viridis;
  bool log = false;
  bool operator==(const ModelViewKey&) const = default;
};

struct ModelViewData {
  ModelViewKey key;
  int n_layer = 0, n_head = 0, tokens = 0;
  std::vector<int> ids;                    // T token ids
  std::vector<std::string> token_strings;  // T display strings
  figure::ModelThumbnails thumbs;          // n_layer * n_head thumbnails, layer-major
  std::vector<float> scores;               // per head (layer-major), NaN: no score; empty: no detector
  std::vector<int> top;                    // the top five heads (layer * n_head + head), highest first
  int position = 0;                        // the position predicted from (0..T-1)
  std::vector<NextRow> next;               // the top five next tokens there
};

// r: a published forward. Thumbnails pooled by key.f, coloured on one scale; the detector's
// scores when key.pattern >= 0 (ties in the top five: lower layer, then head, as
// top_heads); next tokens after key.position clamped to [0, T) (-1: T - 1).
ModelViewData derive_model_view(const GptWorker::Result& r, const ModelViewKey& key);

// "2.3" for head k of a model with n_head heads.
std::string head_label(int k, int n_head);

}  // namespace mhaviz::gui
