// `mhaviz render --model`: a trained model's attention as slides. --view model draws every
// layer × head (with a head detector's scores; --view model L.H with that head large, as the
// app's model view with a head selected, the same figure for the same --size and --font), of
// a GPT or of a Qwen, Llama or Gemma folder (heads grouped by K/V head, sliding layers
// marked); --view layer L every head of one layer and --view head L.H one head, the last two
// through the lesson's module (a GPT's weight split, gpt_layer.hpp; a Qwen, Llama or Gemma
// layer's gqa, hf_layer.hpp), so they are the same figures as for a lesson, with that layer's
// numbers.
#include <optional>
#include <stdexcept>
#include <utility>

#include "cli.hpp"
#include "figure/figure.hpp"
#include "figure/gpt_figures.hpp"
#include "figure/interv_figures.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/gpt_layer.hpp"
#include "mhaviz/heads.hpp"
#include "mhaviz/hf_interventions.hpp"
#include "mhaviz/hf_layer.hpp"
#include "mhaviz/model_kinds.hpp"

namespace mhaviz::cli {
namespace {

// --view's layer and head within the model (one-line errors naming --view).
void check_head(int layers, int heads, int layer, int head) {
  if (layer >= layers)
    throw std::invalid_argument("--view: layer " + std::to_string(layer) + " is out of range [0, " +
                                std::to_string(layers - 1) + "]");
  if (head >= heads)
    throw std::invalid_argument("--view: head " + std::to_string(layer) + "." + std::to_string(head) +
                                " is out of range (heads 0 to " + std::to_string(heads - 1) + ")");
}

// What --view model asks for: a detector, a head shown large (-1: none); checked before a
// model is read.
struct ModelAsk {
  std::optional<HeadPattern> pattern;
  int layer = -1, head = -1;
};
ModelAsk model_ask(const RenderOptions& o) {
  ModelAsk a;
  if (!o.detector.empty()) {
    // A detector's score is a mean of weights in [0, 1]: norm-weighted values are no weights.
    if (o.norm_weighted) throw std::invalid_argument("--norm-weighted: not with --detector");
    HeadPattern p{};
    if (!parse_head_pattern(o.detector, p))
      throw std::invalid_argument("--detector: '" + o.detector +
                                  "' is not one of previous-token, first-token, duplicate-token, induction");
    a.pattern = p;
  }
  // --view model L.H: that head large beside the grid, as the app shows a selected head.
  if (o.view.size() > 1 && !figure::parse_layer_head(o.view[1], a.layer, a.head))
    throw std::invalid_argument("--view: model takes a head L.H (e.g. 5.1), got '" + o.view[1] + "'");
  return a;
}

// The model view's figure of mv with the head asked for large, on a log scale from
// kLogScaleFromTokens unless --linear-scale (as the app chooses).
figure::Figure model_figure(figure::ModelView mv, const ModelAsk& a, const RenderOptions& o, figure::Options fo) {
  mv.selected_layer = a.layer;
  mv.selected_head = a.head;
  fo.log_scale = o.log_scale || (!o.linear_scale && mv.tokens >= figure::kLogScaleFromTokens);
  return figure::build_model_figure(mv, fo);
}

// --view model [L.H] of in's forward (norm-weighted with --norm-weighted), in: ModelInput or
// HfModelInput.
template <class Input>
figure::Figure model_render(const RenderOptions& o, const figure::Options& fo, const ModelAsk& a, Input& in) {
  const ModelFacts f = model_facts(in.model);
  if (a.layer >= 0) check_head(f.layers, f.heads, a.layer, a.head);
  // Induction is measured where every row qualifies: on the repeated random probe.
  if (a.pattern == HeadPattern::Induction) in.ids = figure::induction_probe(f, in.tokenizer);
  auto tr = model_forward(in.model, in.ids);
  // Norm-weighted: the view reads each layer's weights, so they are replaced in the trace.
  if (o.norm_weighted)
    for (int l = 0; l < f.layers; ++l)
      tr.layers[static_cast<std::size_t>(l)].weights = norm_weighted_attention(in.model, tr, l);
  figure::ModelView mv = figure::model_view_of(in.model, tr, in.tokenizer, o.model.path, a.pattern);
  if (o.norm_weighted) figure::make_norm_weighted(mv);
  return model_figure(std::move(mv), a, o, fo);
}

// --view layer L | head L.H: the layer and head asked for (one-line errors naming --view).
std::pair<int, int> layer_ask(const RenderOptions& o) {
  const std::string& kind = o.view.front();
  if (o.view.size() < 2)
    throw std::invalid_argument("--view: " + kind + " needs " +
                                (kind == "layer" ? "a layer (--view layer 5)" : "a head L.H (--view head 5.1)"));
  int layer = 0, head = 0;
  if (kind == "layer") {
    try {
      std::size_t used = 0;
      layer = std::stoi(o.view[1], &used);
      if (used != o.view[1].size() || layer < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("--view: layer '" + o.view[1] + "' is not a layer number");
    }
  } else if (!figure::parse_layer_head(o.view[1], layer, head)) {
    throw std::invalid_argument("--view: head '" + o.view[1] + "' is not LAYER.HEAD (e.g. 5.1)");
  }
  if (!o.detector.empty()) throw std::invalid_argument("--detector: only with --view model");
  if (o.norm_weighted) throw std::invalid_argument("--norm-weighted: only with --view model");
  return {layer, head};
}

// A Qwen, Llama or Gemma layer as the lesson's gqa module (hf_layer.hpp), its input RMSNorm
// output as X; a model the lesson cannot reproduce exactly is refused in hf_layer_refusal's words.
figure::Figure hf_layer_render(const RenderOptions& o, figure::Options fo) {
  const auto [layer, head] = layer_ask(o);
  const HfModelInput in = load_hf_model_input(o.model);
  const ModelFacts f = model_facts(in.model);
  check_head(f.layers, f.heads, layer, head);
  if (const std::string why = hf_layer_refusal(in.model); !why.empty())
    throw std::invalid_argument("--view: " + o.view.front() + " " + o.view[1] + ": " + why);
  const HfTrace tr = hf_forward(in.model, in.ids);
  fo.log_scale = o.log_scale || (!o.linear_scale && tr.tokens() >= figure::kLogScaleFromTokens);
  return figure::hf_layer_figure(in.model, tr, in.tokenizer, o.model.path, layer, head, o.view.front() == "layer", fo);
}

}  // namespace

figure::Figure build_model_render(const RenderOptions& o, figure::Options fo) {
  const std::string& kind = o.view.front();
  const bool hf = is_hf_model_folder(o.model.path);
  if (kind == "model") {
    const ModelAsk a = model_ask(o);  // checked before the files are read
    if (hf) {
      HfModelInput in = load_hf_model_input(o.model);
      return model_render(o, fo, a, in);
    }
    ModelInput in = load_model_input(o.model);
    return model_render(o, fo, a, in);
  }
  if (hf) return hf_layer_render(o, fo);
  const auto [layer, head] = layer_ask(o);
  ModelInput in = load_model_input(o.model);
  check_head(in.model.config.n_layer, in.model.config.n_head, layer, head);
  // That layer as the chapter-3 module, its LayerNorm output as X.
  const GptTrace tr = gpt_forward(in.model, in.ids);
  fo.log_scale = o.log_scale || (!o.linear_scale && tr.tokens() >= figure::kLogScaleFromTokens);
  return figure::gpt_layer_figure(in.model, tr, in.tokenizer, o.model.path, layer, head, kind == "layer", fo);
}

}  // namespace mhaviz::cli
