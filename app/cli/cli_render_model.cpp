// `mhaviz render --model`: a trained GPT's attention as slides. --view model draws every
// layer × head (with a head detector's scores; --view model L.H with that head large, as the
// app's model view with a head selected, the same figure for the same --size and --font),
// --view layer L every head of one layer and
// --view head L.H one head, the last two through the chapter-3 module (gpt_layer.hpp), so
// they are the same figures as for a lesson, with that layer's numbers.
#include <optional>
#include <stdexcept>

#include "cli.hpp"
#include "figure/figure.hpp"
#include "figure/gpt_figures.hpp"
#include "figure/interv_figures.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/gpt_layer.hpp"
#include "mhaviz/heads.hpp"

namespace mhaviz::cli {
namespace {

// --view's layer and head within the model (one-line errors naming --view).
void check_head(const GptConfig& c, int layer, int head) {
  if (layer >= c.n_layer)
    throw std::invalid_argument("--view: layer " + std::to_string(layer) + " is out of range [0, " +
                                std::to_string(c.n_layer - 1) + "]");
  if (head >= c.n_head)
    throw std::invalid_argument("--view: head " + std::to_string(layer) + "." + std::to_string(head) +
                                " is out of range (heads 0 to " + std::to_string(c.n_head - 1) + ")");
}

}  // namespace

figure::Figure build_model_render(const RenderOptions& o, figure::Options fo) {
  ModelInput in = load_model_input(o.model);
  const GptConfig& c = in.model.config;
  const std::string& kind = o.view.front();
  if (kind != "model" && o.view.size() < 2)
    throw std::invalid_argument("--view: " + kind + " needs " +
                                (kind == "layer" ? "a layer (--view layer 5)" : "a head L.H (--view head 5.1)"));
  if (kind == "model") {
    HeadPattern pattern{};
    const bool detect = !o.detector.empty();
    // A detector's score is a mean of weights in [0, 1]: norm-weighted values are no weights.
    if (detect && o.norm_weighted) throw std::invalid_argument("--norm-weighted: not with --detector");
    if (detect && !parse_head_pattern(o.detector, pattern))
      throw std::invalid_argument("--detector: '" + o.detector +
                                  "' is not one of previous-token, first-token, duplicate-token, induction");
    // --view model L.H: that head large beside the grid, as the app shows a selected head.
    int sel_layer = -1, sel_head = -1;
    if (o.view.size() > 1) {
      if (!figure::parse_layer_head(o.view[1], sel_layer, sel_head))
        throw std::invalid_argument("--view: model takes a head L.H (e.g. 5.1), got '" + o.view[1] + "'");
      check_head(c, sel_layer, sel_head);
    }
    // Induction is measured where every row qualifies: on the repeated random probe.
    if (detect && pattern == HeadPattern::Induction) in.ids = figure::induction_probe(in.model, in.tokenizer);
    GptTrace tr = gpt_forward(in.model, in.ids);
    const int T = tr.tokens();
    // Norm-weighted: the view reads each layer's weights, so they are replaced in the trace.
    if (o.norm_weighted)
      for (int l = 0; l < c.n_layer; ++l)
        tr.layers[static_cast<std::size_t>(l)].weights = norm_weighted_attention(in.model, tr, l);
    figure::ModelView mv = figure::gpt_model_view(in.model, tr, in.tokenizer, o.model.path,
                                                  detect ? std::optional(pattern) : std::nullopt);
    if (o.norm_weighted) figure::make_norm_weighted(mv);
    mv.selected_layer = sel_layer;
    mv.selected_head = sel_head;
    fo.log_scale = o.log_scale || (!o.linear_scale && T >= figure::kLogScaleFromTokens);
    return figure::build_model_figure(mv, fo);
  }
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
  check_head(c, layer, head);
  if (!o.detector.empty()) throw std::invalid_argument("--detector: only with --view model");
  if (o.norm_weighted) throw std::invalid_argument("--norm-weighted: only with --view model");
  // That layer as the chapter-3 module, its LayerNorm output as X.
  const GptTrace tr = gpt_forward(in.model, in.ids);
  fo.log_scale = o.log_scale || (!o.linear_scale && tr.tokens() >= 64);
  return figure::gpt_layer_figure(in.model, tr, in.tokenizer, o.model.path, layer, head, kind == "layer", fo);
}

}  // namespace mhaviz::cli
