// Figures of a trained model shared by `mhaviz render --model` and the desktop app's captures,
// so that a slide and the screen show the same thing: the model view (every layer × head,
// optionally with a head detector) of a GPT or of a Qwen/Llama/Gemma model, one GPT layer's
// heads or one head through the chapter-3 module (gpt_layer.hpp), and the induction probe
// both build on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/gpt_worker.hpp"
#include "mhaviz/heads.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/tokenizer.hpp"

namespace mhaviz::figure {

// "PATH · GPT-2 layout, 2 layers × 4 heads, 32 wide · T = 10": the caption's model line.
std::string gpt_caption(const GptModel& m, const std::string& path, int T);

// The display strings of ids ("␣world"; an id the tokenizer does not know, in a model whose
// vocabulary is larger than its tokenizer's, by number: "#50300").
std::vector<std::string> display_tokens(const Tokenizer& tok, const std::vector<int>& ids);

// "5.1" -> layer 5, head 1 (both >= 0, nothing else in the text); false otherwise.
bool parse_layer_head(const std::string& text, int& layer, int& head);

// "PATH · Qwen3 (qwen3), 28 layers × 16 query heads sharing 8 K/V heads, 1024 wide · T = 10".
std::string hf_caption(const ModelFacts& f, const std::string& path, int T);
// What the model view's subtitle says first of a Qwen/Llama/Gemma model: "qwen3", "28
// layers", "16 query heads sharing 8 K/V heads" (or "12 heads" when each has its own), and
// "sliding W = 512 on 22 of 26 layers" when some layers have a window.
std::vector<std::string> hf_model_parts(const ModelFacts& f);

// The induction probe: n random ids (never the special token) then the same n again, after
// <|endoftext|> when the vocabulary has one; n = min(50, what fits the context). Throws
// std::invalid_argument when the context holds fewer than 4 tokens.
std::vector<int> induction_probe(const GptModel& m, const Tokenizer& tok);
std::vector<int> induction_probe(const ModelFacts& f, const Tokenizer& tok);

// Scores of every head for a pattern: [layer * n_head + head], NaN where a head has no
// qualifying row (score_head's nullopt).
std::vector<float> detector_scores(const GptModel& m, const GptTrace& tr, HeadPattern p);

// The model view of a forward: tr's attention weights (n_layer, n_head, T, T) as thumbnails,
// its tokens, the scores of `pattern` when given. The view points into tr: keep tr alive.
ModelView gpt_model_view(const GptModel& m, const GptTrace& tr, const Tokenizer& tok, const std::string& path,
                         std::optional<HeadPattern> pattern);
// The same of a Qwen/Llama/Gemma forward: heads grouped by the K/V head they share, sliding
// layers labelled and their windows hatched, the architecture named.
ModelView hf_model_view(const HfModel& m, const HfTrace& tr, const Tokenizer& tok, const std::string& path,
                        std::optional<HeadPattern> pattern);
// Either of the two by the model's kind (code written once for both).
inline ModelView model_view_of(const GptModel& m, const GptTrace& tr, const Tokenizer& tok, const std::string& path,
                               std::optional<HeadPattern> pattern) {
  return gpt_model_view(m, tr, tok, path, pattern);
}
inline ModelView model_view_of(const HfModel& m, const HfTrace& tr, const Tokenizer& tok, const std::string& path,
                               std::optional<HeadPattern> pattern) {
  return hf_model_view(m, tr, tok, path, pattern);
}

// Layer `layer` of tr as the chapter-3 weight-split module with its LayerNorm output as X:
// every head (grid) or head `head` alone. o.view, o.head, o.layer and o.model_caption are set
// here. Throws std::out_of_range for a layer or head outside the model.
Figure gpt_layer_figure(const GptModel& m, const GptTrace& tr, const Tokenizer& tok, const std::string& path, int layer,
                        int head, bool grid, Options o);
// The same of a Qwen/Llama/Gemma layer as the lesson's gqa module (hf_layer.hpp), its input
// RMSNorm output as X; also throws std::invalid_argument with hf_layer_refusal's line.
Figure hf_layer_figure(const HfModel& m, const HfTrace& tr, const Tokenizer& tok, const std::string& path, int layer,
                       int head, bool grid, Options o);

}  // namespace mhaviz::figure
