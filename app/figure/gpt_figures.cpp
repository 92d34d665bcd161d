// Figures of a trained GPT (see gpt_figures.hpp).
#include "figure/gpt_figures.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "mhaviz/gpt_layer.hpp"
#include "mhaviz/hf_layer.hpp"

namespace mhaviz::figure {

namespace {

// The text a title quotes: its first 80 bytes, without the space a byte-level or ids
// vocabulary puts before the first word (" 1 3 5" reads as "1 3 5").
std::string quoted_text(const std::string& text) {
  const std::size_t from = std::min(text.find_first_not_of(' '), text.size());
  return text.substr(from, 80);
}

}  // namespace

std::string gpt_caption(const GptModel& m, const std::string& path, int T) {
  const GptConfig& c = m.config;
  return path + " \xC2\xB7 " +
         (m.layout == GptLayout::HuggingFace ? "GPT-2 layout"
          : c.attn_only                      ? "the book's GPTModel, attention-only"
                                             : "the book's GPTModel") +
         ", " + std::to_string(c.n_layer) + " layers \xC3\x97 " + std::to_string(c.n_head) + " heads, " +
         std::to_string(c.n_embd) + " wide \xC2\xB7 T = " + std::to_string(T);
}

std::vector<std::string> display_tokens(const Tokenizer& tok, const std::vector<int>& ids) {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (const int id : ids) out.push_back(tok.has_token(id) ? tok.display_token(id) : "#" + std::to_string(id));
  return out;
}

bool parse_layer_head(const std::string& text, int& layer, int& head) {
  const auto dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= text.size()) return false;
  try {
    std::size_t a = 0, b = 0;
    layer = std::stoi(text.substr(0, dot), &a);
    head = std::stoi(text.substr(dot + 1), &b);
    return a == dot && b == text.size() - dot - 1 && layer >= 0 && head >= 0;
  } catch (const std::exception&) {
    return false;
  }
}

std::string hf_caption(const ModelFacts& f, const std::string& path, int T) {
  return path + " \xC2\xB7 " + f.architecture + " (" + f.model_type + "), " + std::to_string(f.layers) +
         " layers \xC3\x97 " + std::to_string(f.heads) + " query heads sharing " + std::to_string(f.kv_heads) +
         " K/V heads, " + std::to_string(f.width) + " wide \xC2\xB7 T = " + std::to_string(T);
}

std::vector<std::string> hf_model_parts(const ModelFacts& f) {
  std::vector<std::string> parts = {f.model_type, std::to_string(f.layers) + " layers"};
  parts.push_back(f.kv_heads < f.heads
                      ? std::to_string(f.heads) + " query heads sharing " + std::to_string(f.kv_heads) + " K/V heads"
                      : std::to_string(f.heads) + " heads");
  if (const int n = f.sliding_layers(); n > 0)
    parts.push_back("sliding W = " + std::to_string(f.sliding_window()) + " on " + std::to_string(n) + " of " +
                    std::to_string(f.layers) + " layers");
  return parts;
}

std::vector<int> induction_probe(const GptModel& m, const Tokenizer& tok) {
  return induction_probe(model_facts(m), tok);
}

std::vector<int> induction_probe(const ModelFacts& f, const Tokenizer& tok) {
  const int eot = tok.eot_id();
  const bool has_eot = eot >= 0 && eot < f.vocab;
  const int hi = has_eot && eot > 0 ? eot : f.vocab;
  const int n = std::min(50, (f.context - (has_eot ? 1 : 0)) / 2);
  if (n < 2) throw std::invalid_argument("--detector: induction needs a context of at least 4 tokens");
  return repeated_random_tokens(n, 0, hi, 123, has_eot ? eot : -1);
}

namespace {

// Scores of every layer's (1, H, T, T) weights, layer-major.
template <class Layers>
std::vector<float> layer_scores(const Layers& layers, int n_head, const std::vector<int>& ids, HeadPattern p) {
  std::vector<float> out;
  out.reserve(layers.size() * static_cast<std::size_t>(n_head));
  for (const auto& layer : layers) {
    const auto s = score_layer(p, layer.weights.data, n_head, ids);
    for (const auto& v : s) out.push_back(v ? *v : std::numeric_limits<float>::quiet_NaN());
  }
  return out;
}

// The thumbnails of every layer's (1, H, T, T) weights, layer-major.
template <class Layers>
void point_at_weights(ModelView& mv, const Layers& layers) {
  const auto TT = static_cast<std::size_t>(mv.tokens) * static_cast<std::size_t>(mv.tokens);
  for (const auto& layer : layers)
    for (int h = 0; h < mv.n_head; ++h)
      mv.weights.push_back(layer.weights.data.data() + static_cast<std::size_t>(h) * TT);
}

std::string text_title(const Tokenizer& tok, const std::vector<int>& ids) {
  return "Every layer \xC3\x97 head on \xE2\x80\x9C" + quoted_text(tok.decode(ids)) + "\xE2\x80\x9D";
}
std::string probe_title(int T) {
  return "Every head on a random sequence repeated twice (" + std::to_string(T) + " tokens)";
}

// The induction probe is named as such (its decoded ids mean nothing).
bool is_probe(const ModelFacts& f, const Tokenizer& tok, const std::vector<int>& ids) {
  try {
    return ids == induction_probe(f, tok);
  } catch (const std::invalid_argument&) {
    return false;
  }
}

}  // namespace

std::vector<float> detector_scores(const GptModel& m, const GptTrace& tr, HeadPattern p) {
  return layer_scores(tr.layers, m.config.n_head, tr.ids, p);
}

namespace {

// What the views of both kinds share: every layer's weights, the title (the induction probe
// named as such, any other ids by their text), the tokens, the detector's scores.
template <class Layers>
ModelView basic_view(const ModelFacts& f, const Layers& layers, const std::vector<int>& ids, const Tokenizer& tok,
                     std::optional<HeadPattern> pattern) {
  ModelView mv;
  mv.n_layer = f.layers, mv.n_head = f.heads, mv.tokens = static_cast<int>(ids.size());
  point_at_weights(mv, layers);
  mv.title = is_probe(f, tok, ids) ? probe_title(mv.tokens) : text_title(tok, ids);
  mv.token_names = display_tokens(tok, ids);
  if (pattern) {
    mv.pattern = std::string(head_pattern_name(*pattern));
    mv.scores = layer_scores(layers, f.heads, ids, *pattern);
  }
  return mv;
}

}  // namespace

ModelView gpt_model_view(const GptModel& m, const GptTrace& tr, const Tokenizer& tok, const std::string& path,
                         std::optional<HeadPattern> pattern) {
  ModelView mv = basic_view(model_facts(m), tr.layers, tr.ids, tok, pattern);
  mv.caption = gpt_caption(m, path, tr.tokens());
  return mv;
}

ModelView hf_model_view(const HfModel& m, const HfTrace& tr, const Tokenizer& tok, const std::string& path,
                        std::optional<HeadPattern> pattern) {
  const ModelFacts f = model_facts(m);
  ModelView mv = basic_view(f, tr.layers, tr.ids, tok, pattern);
  mv.kv_heads = f.kv_heads;
  if (f.sliding_layers() > 0) mv.windows = f.window;
  mv.model_parts = hf_model_parts(f);
  mv.caption = hf_caption(f, path, tr.tokens());
  return mv;
}

namespace {

void check_layer_head(int layers, int heads, int layer, int head) {
  if (layer < 0 || layer >= layers)
    throw std::out_of_range("layer " + std::to_string(layer) + " is out of range [0, " + std::to_string(layers - 1) +
                            "]");
  if (head < 0 || head >= heads)
    throw std::out_of_range("head " + std::to_string(layer) + "." + std::to_string(head) +
                            " is out of range (heads 0 to " + std::to_string(heads - 1) + ")");
}

// The lesson's figure of a layer's module t: every head (grid) or one.
Figure layer_figure(const Trace& t, const std::vector<std::string>& tokens, int layer, int head, bool grid,
                    std::string caption, Options o) {
  o.view = grid ? View::Grid : View::Head;
  o.head = head;
  o.layer = layer;
  o.model_caption = std::move(caption);
  return build_figure(t, tokens, o);
}

}  // namespace

Figure gpt_layer_figure(const GptModel& m, const GptTrace& tr, const Tokenizer& tok, const std::string& path, int layer,
                        int head, bool grid, Options o) {
  check_layer_head(m.config.n_layer, m.config.n_head, layer, head);
  const std::vector<std::string> tokens = display_tokens(tok, tr.ids);
  const Session s = gpt_layer_session(m, layer, tokens, tr.layers[static_cast<std::size_t>(layer)].x.data);
  const Model mod = weight_split_from_gpt_layer(m, layer);
  return layer_figure(forward(mod, s.input_tensor()), s.tokens, layer, head, grid, gpt_caption(m, path, tr.tokens()),
                      o);
}

Figure hf_layer_figure(const HfModel& m, const HfTrace& tr, const Tokenizer& tok, const std::string& path, int layer,
                       int head, bool grid, Options o) {
  check_layer_head(m.config.num_hidden_layers, m.config.num_attention_heads, layer, head);
  const Session s =
      hf_layer_session(m, layer, display_tokens(tok, tr.ids), tr.layers[static_cast<std::size_t>(layer)].x.data);
  const Model mod = build_model(s.model, s.d_in());
  return layer_figure(forward(mod, s.input_tensor()), s.tokens, layer, head, grid,
                      hf_caption(model_facts(m), path, tr.tokens()), o);
}

}  // namespace mhaviz::figure
