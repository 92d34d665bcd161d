// The model view's data (see model_view.hpp).
#include "model_view.hpp"

#include <algorithm>
#include <cmath>

#include "figure/gpt_figures.hpp"
#include "mhaviz/prompt.hpp"

namespace mhaviz::gui {

TextTokens tokenize_for_display(const Tokenizer& tok, std::string_view text, bool prepend_eot, int n_ctx) {
  const Prompt p = encode_prompt(tok, text, {prepend_eot ? SpecialFirst::EndOfText : SpecialFirst::None}, {n_ctx, 0});
  TextTokens out;
  for (const int id : p.ids) out.tokens.push_back(tok.display_token(id));
  out.error = p.error;
  return out;
}

namespace {
// An id the tokenizer does not know (a model whose vocabulary is larger than its tokenizer's)
// is shown by number.
std::string shown_token(const Tokenizer& tok, int id) {
  return id >= 0 && id < tok.vocab_size() ? tok.display_token(id) : "#" + std::to_string(id);
}
}  // namespace

ModelViewData derive_model_view(const GptWorker::Result& r, const ModelViewKey& key) {
  const GptModel& m = *r.loaded.model;
  const Tokenizer& tok = *r.loaded.tokenizer;
  const GptTrace& tr = *r.trace;
  ModelViewData d;
  d.key = key;
  d.n_layer = m.config.n_layer;
  d.n_head = m.config.n_head;
  d.tokens = tr.tokens();
  d.ids = tr.ids;
  for (const int id : tr.ids) d.token_strings.push_back(shown_token(tok, id));
  std::optional<HeadPattern> pattern;
  if (key.pattern >= 0 && key.pattern < kHeadPatternCount) pattern = kHeadPatterns[key.pattern];
  const figure::ModelView mv = figure::gpt_model_view(m, tr, tok, r.loaded.path.string(), pattern);
  d.thumbs = figure::model_thumbnails(mv, key.f, key.cmap, key.log);
  d.scores = mv.scores;
  if (!d.scores.empty()) {
    std::vector<std::vector<std::optional<float>>> by_layer(static_cast<std::size_t>(d.n_layer));
    for (int k = 0; k < d.n_layer * d.n_head; ++k) {
      const float s = d.scores[static_cast<std::size_t>(k)];
      by_layer[static_cast<std::size_t>(k / d.n_head)].push_back(std::isfinite(s) ? std::optional(s) : std::nullopt);
    }
    for (const ScoredHead& h : top_heads(by_layer, 5)) d.top.push_back(h.layer * d.n_head + h.head);
  }
  d.position = key.position < 0 ? d.tokens - 1 : std::clamp(key.position, 0, d.tokens - 1);
  const NextToken nt = next_token(m, tr, d.position, 5);
  for (const TokenProbability& t : nt.top) d.next.push_back({t.id, shown_token(tok, t.id), t.p});
  return d;
}

std::string head_label(int k, int n_head) { return std::to_string(k / n_head) + "." + std::to_string(k % n_head); }

}  // namespace mhaviz::gui
