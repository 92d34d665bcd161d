// Figures of a trained GPT (see gpt_figures.hpp).
#include "figure/gpt_figures.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "mhaviz/gpt_layer.hpp"

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
  for (const int id : ids)
    out.push_back(id >= 0 && id < tok.vocab_size() ? tok.display_token(id) : "#" + std::to_string(id));
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

std::vector<int> induction_probe(const GptModel& m, const Tokenizer& tok) {
  const int eot = tok.eot_id();
  const bool has_eot = eot >= 0 && eot < m.config.vocab_size;
  const int hi = has_eot && eot > 0 ? eot : m.config.vocab_size;
  const int n = std::min(50, (m.config.n_ctx - (has_eot ? 1 : 0)) / 2);
  if (n < 2) throw std::invalid_argument("--detector: induction needs a context of at least 4 tokens");
  return repeated_random_tokens(n, 0, hi, 123, has_eot ? eot : -1);
}

std::vector<float> detector_scores(const GptModel& m, const GptTrace& tr, HeadPattern p) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(m.config.n_layer) * static_cast<std::size_t>(m.config.n_head));
  for (int l = 0; l < m.config.n_layer; ++l) {
    const auto s = score_layer(p, tr.layers[static_cast<std::size_t>(l)].weights.data, m.config.n_head, tr.ids);
    for (const auto& v : s) out.push_back(v ? *v : std::numeric_limits<float>::quiet_NaN());
  }
  return out;
}

ModelView gpt_model_view(const GptModel& m, const GptTrace& tr, const Tokenizer& tok, const std::string& path,
                         std::optional<HeadPattern> pattern) {
  const GptConfig& c = m.config;
  const int T = tr.tokens();
  ModelView mv;
  mv.n_layer = c.n_layer, mv.n_head = c.n_head, mv.tokens = T;
  const auto TT = static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
  for (int l = 0; l < c.n_layer; ++l)
    for (int h = 0; h < c.n_head; ++h)
      mv.weights.push_back(tr.layers[static_cast<std::size_t>(l)].weights.data.data() +
                           static_cast<std::size_t>(h) * TT);
  // The induction probe is named as such (its decoded ids mean nothing); any other ids by their text.
  bool probe = false;
  try {
    probe = tr.ids == induction_probe(m, tok);
  } catch (const std::invalid_argument&) {
  }
  mv.title = probe ? "Every head on a random sequence repeated twice (" + std::to_string(T) + " tokens)"
                   : "Every layer \xC3\x97 head on \xE2\x80\x9C" + quoted_text(tok.decode(tr.ids)) + "\xE2\x80\x9D";
  mv.caption = gpt_caption(m, path, T);
  mv.token_names = display_tokens(tok, tr.ids);
  if (pattern) {
    mv.pattern = std::string(head_pattern_name(*pattern));
    mv.scores = detector_scores(m, tr, *pattern);
  }
  return mv;
}

Figure gpt_layer_figure(const GptModel& m, const GptTrace& tr, const Tokenizer& tok, const std::string& path, int layer,
                        int head, bool grid, Options o) {
  if (layer < 0 || layer >= m.config.n_layer)
    throw std::out_of_range("layer " + std::to_string(layer) + " is out of range [0, " +
                            std::to_string(m.config.n_layer - 1) + "]");
  if (head < 0 || head >= m.config.n_head)
    throw std::out_of_range("head " + std::to_string(layer) + "." + std::to_string(head) +
                            " is out of range (heads 0 to " + std::to_string(m.config.n_head - 1) + ")");
  const std::vector<std::string> tokens = display_tokens(tok, tr.ids);
  const Session s = gpt_layer_session(m, layer, tokens, tr.layers[static_cast<std::size_t>(layer)].x.data);
  const Model mod = weight_split_from_gpt_layer(m, layer);
  const Trace t = forward(mod, s.input_tensor());
  o.view = grid ? View::Grid : View::Head;
  o.head = head;
  o.layer = layer;
  o.model_caption = gpt_caption(m, path, tr.tokens());
  return build_figure(t, s.tokens, o);
}

}  // namespace mhaviz::figure
