// `mhaviz render --model`: a trained GPT's attention as slides. --view model draws every
// layer × head (with a head detector's scores), --view layer L every head of one layer and
// --view head L.H one head, the last two through the chapter-3 module (gpt_layer.hpp), so
// they are the same figures as for a lesson, with that layer's numbers.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "cli.hpp"
#include "figure/figure.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/gpt_layer.hpp"
#include "mhaviz/heads.hpp"

namespace mhaviz::cli {
namespace {

// The induction probe: n random ids (not the special token) then the same n again, after
// <|endoftext|> when the vocabulary has one; n fits the context.
std::vector<int> induction_probe(const GptModel& m, const Tokenizer& tok) {
  const int eot = tok.eot_id(), hi = eot > 0 && eot < m.config.vocab_size ? eot : m.config.vocab_size;
  const int n = std::min(50, (m.config.n_ctx - (eot >= 0 ? 1 : 0)) / 2);
  if (n < 2) throw std::invalid_argument("--detector: induction needs a context of at least 4 tokens");
  return repeated_random_tokens(n, 0, hi, 123, eot >= 0 && eot < m.config.vocab_size ? eot : -1);
}

std::string model_caption(const GptModel& m, const std::string& path, int T) {
  const GptConfig& c = m.config;
  return path + " \xC2\xB7 " + (m.layout == GptLayout::HuggingFace ? "GPT-2 layout" : "the book's GPTModel") + ", " +
         std::to_string(c.n_layer) + " layers \xC3\x97 " + std::to_string(c.n_head) + " heads, " + std::to_string(c.n_embd) +
         " wide \xC2\xB7 T = " + std::to_string(T);
}

// "L.H" -> layer, head.
bool parse_layer_head(const std::string& s, int& layer, int& head) {
  const auto dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= s.size()) return false;
  try {
    std::size_t a = 0, b = 0;
    layer = std::stoi(s.substr(0, dot), &a);
    head = std::stoi(s.substr(dot + 1), &b);
    return a == dot && b == s.size() - dot - 1 && layer >= 0 && head >= 0;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

figure::Figure build_model_render(const RenderOptions& o, figure::Options fo) {
  ModelInput in = load_model_input(o.model);
  const GptConfig& c = in.model.config;
  const std::string& kind = o.view.front();
  if (kind != "model" && o.view.size() < 2)
    throw std::invalid_argument("--view: " + kind + " needs " + (kind == "layer" ? "a layer (--view layer 5)" : "a head L.H (--view head 5.1)"));
  if (kind == "model") {
    if (o.view.size() > 1) throw std::invalid_argument("--view: model takes no number, got '" + o.view[1] + "'");
    HeadPattern pattern{};
    const bool detect = !o.detector.empty();
    if (detect && !parse_head_pattern(o.detector, pattern))
      throw std::invalid_argument("--detector: '" + o.detector + "' is not one of previous-token, first-token, duplicate-token, induction");
    // Induction is measured where every row qualifies: on the repeated random probe.
    if (detect && pattern == HeadPattern::Induction) in.ids = induction_probe(in.model, in.tokenizer);
    const GptTrace tr = gpt_forward(in.model, in.ids);
    const int T = tr.tokens();
    figure::ModelView mv;
    mv.n_layer = c.n_layer, mv.n_head = c.n_head, mv.tokens = T;
    for (int l = 0; l < c.n_layer; ++l)
      for (int h = 0; h < c.n_head; ++h)
        mv.weights.push_back(tr.layers[static_cast<std::size_t>(l)].weights.data.data() + static_cast<std::size_t>(h) * T * T);
    mv.title = detect && pattern == HeadPattern::Induction
                   ? "Every head on a random sequence repeated twice (" + std::to_string(T) + " tokens)"
                   : "Every layer \xC3\x97 head on \xE2\x80\x9C" + in.tokenizer.decode(in.ids).substr(0, 80) + "\xE2\x80\x9D";
    mv.caption = model_caption(in.model, o.model.path, T);
    if (detect) {
      mv.pattern = std::string(head_pattern_name(pattern));
      for (int l = 0; l < c.n_layer; ++l) {
        const auto s = score_layer(pattern, tr.layers[static_cast<std::size_t>(l)].weights.data, c.n_head, tr.ids);
        for (const auto& v : s) mv.scores.push_back(v ? *v : std::numeric_limits<float>::quiet_NaN());
      }
    }
    fo.log_scale = o.log_scale || (!o.linear_scale && T >= 64);
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
  } else if (!parse_layer_head(o.view[1], layer, head)) {
    throw std::invalid_argument("--view: head '" + o.view[1] + "' is not LAYER.HEAD (e.g. 5.1)");
  }
  if (layer >= c.n_layer)
    throw std::invalid_argument("--view: layer " + std::to_string(layer) + " is out of range [0, " + std::to_string(c.n_layer - 1) + "]");
  if (head >= c.n_head)
    throw std::invalid_argument("--view: head " + std::to_string(layer) + "." + std::to_string(head) + " is out of range (heads 0 to " +
                                std::to_string(c.n_head - 1) + ")");
  if (!o.detector.empty()) throw std::invalid_argument("--detector: only with --view model");
  // That layer as the chapter-3 module, its LayerNorm output as X.
  const GptTrace tr = gpt_forward(in.model, in.ids);
  std::vector<std::string> tokens;
  for (const int id : in.ids) tokens.push_back(in.tokenizer.display_token(id));
  const Session s = gpt_layer_session(in.model, layer, tokens, tr.layers[static_cast<std::size_t>(layer)].x.data);
  const Model m = weight_split_from_gpt_layer(in.model, layer);
  const Trace t = forward(m, s.input_tensor());
  fo.view = kind == "layer" ? figure::View::Grid : figure::View::Head;
  fo.head = head;
  fo.layer = layer;
  fo.model_caption = model_caption(in.model, o.model.path, tr.tokens());
  fo.log_scale = o.log_scale || (!o.linear_scale && t.tokens >= 64);
  return figure::build_figure(t, s.tokens, fo);
}

}  // namespace mhaviz::cli
