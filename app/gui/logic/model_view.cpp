// The model view's data (see model_view.hpp).
#include "model_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

// [SECTION] Next-token probabilities as printed
namespace {

// p as a percentage with `extra` digits beyond two significant ones.
std::string percent(float p, int extra) {
  const double pc = static_cast<double>(p) * 100.0;
  char buf[32];
  if (!(pc > 0.0)) return "0%";
  if (pc < 1e-6) {
    std::snprintf(buf, sizeof buf, "%.*e%%", 1 + extra, pc);
    return buf;
  }
  // Decimals for two significant digits, one more from 1% to 10% ("3.14%"), one from 10% on.
  const int lead = static_cast<int>(std::floor(std::log10(pc)));
  const int decimals = (pc >= 10.0 ? 1 : pc >= 1.0 ? 2 : 1 - lead) + extra;
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, pc);
  return buf;
}

}  // namespace

std::vector<std::string> percent_texts(const std::vector<float>& p) {
  std::vector<std::string> out;
  for (int extra = 0; extra <= 4; ++extra) {
    out.clear();
    for (const float x : p) out.push_back(percent(x, extra));
    bool distinct = true;
    for (std::size_t i = 0; i < p.size() && distinct; ++i)
      for (std::size_t j = i + 1; j < p.size() && distinct; ++j) distinct = p[i] == p[j] || out[i] != out[j];
    if (distinct) break;
  }
  return out;
}

// [SECTION] The view of a forward
std::shared_ptr<const ModelViewData> derive_model_view(std::shared_ptr<const GptWorker::Result> r,
                                                       const ModelViewKey& key,
                                                       std::shared_ptr<const ModelViewData> prev) {
  const GptModel& m = *r->loaded.model;
  const Tokenizer& tok = *r->loaded.tokenizer;
  const GptTrace& tr = *r->trace;
  auto d = std::make_shared<ModelViewData>();
  d->key = key;
  d->result = r;
  d->n_layer = m.config.n_layer;
  d->n_head = m.config.n_head;
  d->tokens = tr.tokens();
  d->ids = tr.ids;
  // What the view shown computed for this forward stays: scoring and pooling 144 heads of
  // 1024 x 1024 weights take tens of milliseconds.
  const bool same = prev && prev->result == r;
  if (same && prev->key.pattern == key.pattern) {
    d->view = prev->view;
    d->top = prev->top;
  } else {
    std::optional<HeadPattern> pattern;
    if (key.pattern >= 0 && key.pattern < kHeadPatternCount) pattern = kHeadPatterns[key.pattern];
    d->view = figure::gpt_model_view(m, tr, tok, r->loaded.path.string(), pattern);
    d->top = figure::model_top_heads(d->view);
  }
  d->token_strings = d->view.token_names;
  d->view.selected_layer = key.layer;
  d->view.selected_head = key.head;
  const int f = figure::model_pool_factor(d->view, key.fig);
  if (same && prev->thumbs.f == f && prev->thumbs.cmap == key.fig.colormap &&
      prev->thumbs.log_scale == key.fig.log_scale)
    d->thumbs = prev->thumbs;
  else
    d->thumbs = figure::model_thumbnails(d->view, f, key.fig.colormap, key.fig.log_scale);
  d->figure = model_figure_for(*d, key.fig);
  d->position = key.position < 0 ? d->tokens - 1 : std::clamp(key.position, 0, d->tokens - 1);
  if (same && prev->position == d->position) {
    d->next = prev->next;
  } else {
    const NextToken nt = next_token(m, tr, d->position, 5);
    for (const TokenProbability& t : nt.top)
      d->next.push_back({t.id, figure::display_tokens(tok, {t.id}).front(), t.p, std::log(static_cast<double>(t.p))});
  }
  std::vector<float> ps;
  for (const NextRow& n : d->next) ps.push_back(n.p);
  d->next_shown = percent_texts(ps);
  return d;
}

figure::Figure model_figure_for(const ModelViewData& d, const figure::Options& o) {
  figure::ModelView v = d.view;
  v.thumbs = &d.thumbs;
  return figure::build_model_figure(v, o);
}

std::string head_label(int k, int n_head) { return std::to_string(k / n_head) + "." + std::to_string(k % n_head); }

}  // namespace mhaviz::gui
