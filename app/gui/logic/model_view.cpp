// The model view's data (see model_view.hpp).
#include "model_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "figure/gpt_figures.hpp"
#include "figure/interv_figures.hpp"
#include "mhaviz/prompt.hpp"

namespace mhaviz::gui {

TextTokens tokenize_for_display(const Tokenizer& tok, std::string_view text, PromptOptions o, int n_ctx) {
  const Prompt p = encode_prompt(tok, text, o, {n_ctx, 0});
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
double text_loss(const GptModel& m, const GptTrace& tr) {
  const int T = tr.tokens(), V = m.config.vocab_size;
  if (T < 2) return std::numeric_limits<double>::quiet_NaN();
  // The last layer's lens is the LM head on every row, bit for bit gpt_logits, in one product.
  const std::vector<float> logits = lens_logits(m, tr, m.config.n_layer - 1);
  double sum = 0.0;
  for (int i = 0; i + 1 < T; ++i) {
    const TokenMetric next{tr.ids[static_cast<std::size_t>(i + 1)], -1};
    sum -= next.of(
        std::span<const float>(logits.data() + static_cast<std::ptrdiff_t>(i) * V, static_cast<std::size_t>(V)));
  }
  return sum / (T - 1);
}

namespace {

// The run key shows: the clean forward, or (heads ablated) its ablated run, reused from prev.
std::shared_ptr<const GptTrace> shown_run(const GptWorker::Result& r, const ModelViewKey& key,
                                          const ModelViewData* same_run) {
  if (key.ablate.empty()) return r.trace;
  if (same_run != nullptr) return same_run->ablated;
  Intervention iv;
  iv.ablate = key.ablate;
  iv.mode = key.ablation_mode;
  return std::make_shared<const GptTrace>(gpt_forward_intervened(*r.loaded.model, *r.trace, iv));
}

// The next tokens after position pos of tr, with each one's p in the clean run.
std::vector<NextRow> next_rows(const GptModel& m, const Tokenizer& tok, const GptTrace& tr, const GptTrace& clean,
                               int pos) {
  const NextToken nt = next_token(m, tr, pos, 5);
  const NextToken base = &tr == &clean ? nt : next_token(m, clean, pos, 0);
  std::vector<NextRow> out;
  for (const TokenProbability& t : nt.top)
    out.push_back({t.id, figure::display_tokens(tok, {t.id}).front(), t.p, std::log(static_cast<double>(t.p)),
                   base.probs[static_cast<std::size_t>(t.id)]});
  return out;
}

// The lens table of tr, with key.lens_target's rank after each layer at key.lens_position;
// reused from same_run (the view shown, of the same run) when it ranked the same.
void lens_of(ModelViewData& d, const GptModel& m, const Tokenizer& tok, const GptTrace& tr, const std::string& path,
             const ModelViewData* same_run) {
  const ModelViewKey& k = d.key;
  if (same_run && same_run->lens && same_run->key.lens_target == k.lens_target &&
      same_run->key.lens_position == k.lens_position) {
    d.lens = same_run->lens;
    d.lens_position = same_run->lens_position;
    d.lens_rank = same_run->lens_rank;
    d.lens_p = same_run->lens_p;
    return;
  }
  const LogitLens lens = logit_lens(m, tr, 1, k.lens_target);
  const int T = tr.tokens();
  if (k.lens_target >= 0) {
    d.lens_position = k.lens_position < 0 ? T - 1 : std::min(k.lens_position, T - 1);
    for (int l = 0; l < lens.layers; ++l) {
      const std::size_t at =
          static_cast<std::size_t>(l) * static_cast<std::size_t>(T) + static_cast<std::size_t>(d.lens_position);
      d.lens_rank.push_back(lens.rank[at]);
      d.lens_p.push_back(lens.target_p[at]);
    }
  }
  d.lens = std::make_shared<const figure::GridView>(
      figure::lens_view(m, lens, tok, figure::display_tokens(tok, tr.ids), path, d.lens_position));
}

// d's view with key's selection on key's canvas: its tokens, thumbnails (prev's, when it
// showed the same weights pooled alike), figure and next-token position.
void lay_out(ModelViewData& d, const ModelViewKey& key, const ModelViewData* same) {
  d.token_strings = d.view.token_names;
  d.view.selected_layer = key.layer;
  d.view.selected_head = key.head;
  const int f = figure::model_pool_factor(d.view, key.fig);
  if (same && same->thumbs.f == f && same->thumbs.cmap == key.fig.colormap &&
      same->thumbs.log_scale == key.fig.log_scale)
    d.thumbs = same->thumbs;
  else
    d.thumbs = figure::model_thumbnails(d.view, f, key.fig.colormap, key.fig.log_scale);
  d.figure = model_figure_for(d, key.fig);
  d.position = key.position < 0 ? d.tokens - 1 : std::clamp(key.position, 0, d.tokens - 1);
}

std::vector<std::string> shown_percentages(const std::vector<NextRow>& next) {
  std::vector<float> ps;
  for (const NextRow& n : next) ps.push_back(n.p);
  return percent_texts(ps);
}

// The next tokens after position pos of any forward (no ablated run to compare with).
std::vector<NextRow> next_rows(const GptWorker::Result& r, int pos) {
  const NextToken nt = next_token_from_logits(r.logits(pos), 5);
  std::vector<NextRow> out;
  for (const TokenProbability& t : nt.top)
    out.push_back({t.id, figure::display_tokens(*r.loaded.tokenizer, {t.id}).front(), t.p,
                   std::log(static_cast<double>(t.p)), t.p});
  return out;
}

// A Qwen/Llama/Gemma forward: the weights, detector and next tokens (no interventions: the
// key's ablation, norm-weighted and lens are not asked for such a model, see wanted_key).
std::shared_ptr<const ModelViewData> derive_hf_view(std::shared_ptr<const GptWorker::Result> r, const ModelViewKey& key,
                                                    const std::shared_ptr<const ModelViewData>& prev) {
  auto d = std::make_shared<ModelViewData>();
  d->key = key;
  d->result = r;
  d->n_layer = r->loaded.facts.layers;
  d->n_head = r->loaded.facts.heads;
  d->tokens = r->tokens();
  d->ids = r->ids();
  const bool same = prev && prev->result == r;
  if (same && prev->key.pattern == key.pattern) {
    d->view = prev->view;
    d->top = prev->top;
  } else {
    std::optional<HeadPattern> pattern;
    if (key.pattern >= 0 && key.pattern < kHeadPatternCount) pattern = kHeadPatterns[key.pattern];
    d->view =
        figure::hf_model_view(*r->loaded.hf, *r->hf_trace, *r->loaded.tokenizer, r->loaded.path.string(), pattern);
    d->top = figure::model_top_heads(d->view);
  }
  lay_out(*d, key, same ? prev.get() : nullptr);
  d->next = same && prev->position == d->position ? prev->next : next_rows(*r, d->position);
  d->next_shown = shown_percentages(d->next);
  return d;
}

}  // namespace

std::shared_ptr<const ModelViewData> derive_model_view(std::shared_ptr<const GptWorker::Result> r,
                                                       const ModelViewKey& key,
                                                       std::shared_ptr<const ModelViewData> prev) {
  if (r->loaded.hf) return derive_hf_view(r, key, prev);
  const GptModel& m = *r->loaded.model;
  const Tokenizer& tok = *r->loaded.tokenizer;
  auto d = std::make_shared<ModelViewData>();
  d->key = key;
  d->result = r;
  d->n_layer = m.config.n_layer;
  d->n_head = m.config.n_head;
  // What the view shown computed for this forward stays: scoring and pooling 144 heads of
  // 1024 x 1024 weights take tens of milliseconds.
  const bool same_run =
      prev && prev->result == r && prev->key.ablate == key.ablate && prev->key.ablation_mode == key.ablation_mode;
  const bool same = same_run && prev->key.norm_weighted == key.norm_weighted;
  d->ablated = key.ablate.empty() ? nullptr : shown_run(*r, key, same_run ? prev.get() : nullptr);
  const GptTrace& tr = d->ablated ? *d->ablated : *r->trace;
  d->tokens = tr.tokens();
  d->ids = tr.ids;
  if (same && prev->key.pattern == key.pattern) {
    d->view = prev->view;
    d->top = prev->top;
    d->norm_weights = prev->norm_weights;
  } else {
    std::optional<HeadPattern> pattern;
    if (key.pattern >= 0 && key.pattern < kHeadPatternCount) pattern = kHeadPatterns[key.pattern];
    d->view = figure::gpt_model_view(m, tr, tok, r->loaded.path.string(), pattern);
    d->top = figure::model_top_heads(d->view);
    if (key.norm_weighted) {
      // The detector scores the weights; the thumbnails and the large head show α·‖f(x)‖.
      d->norm_weights = same_run && prev->norm_weights ? prev->norm_weights : [&] {
        auto t = std::make_shared<std::vector<Tensor>>();
        for (int l = 0; l < d->n_layer; ++l) t->push_back(norm_weighted_attention(m, tr, l));
        return std::shared_ptr<const std::vector<Tensor>>(std::move(t));
      }();
      const std::size_t TT = static_cast<std::size_t>(d->tokens) * static_cast<std::size_t>(d->tokens);
      for (int k = 0; k < d->n_layer * d->n_head; ++k)
        d->view.weights[static_cast<std::size_t>(k)] =
            (*d->norm_weights)[static_cast<std::size_t>(k / d->n_head)].data.data() +
            static_cast<std::size_t>(k % d->n_head) * TT;
      figure::make_norm_weighted(d->view);
    }
  }
  d->view.ablated.clear();
  for (const HeadIndex& h : key.ablate) d->view.ablated.push_back(h.layer * d->n_head + h.head);
  lay_out(*d, key, same ? prev.get() : nullptr);
  if (same_run && prev->position == d->position)
    d->next = prev->next;
  else
    d->next = next_rows(m, tok, tr, *r->trace, d->position);
  if (d->ablated) {
    d->loss = same_run ? prev->loss : text_loss(m, tr);
    d->clean_loss =
        prev && prev->result == r && !std::isnan(prev->clean_loss) ? prev->clean_loss : text_loss(m, *r->trace);
  }
  if (key.lens) lens_of(*d, m, tok, tr, r->loaded.path.string(), same_run ? prev.get() : nullptr);
  d->next_shown = shown_percentages(d->next);
  return d;
}

figure::Figure model_figure_for(const ModelViewData& d, const figure::Options& o) {
  figure::ModelView v = d.view;
  v.thumbs = &d.thumbs;
  return figure::build_model_figure(v, o);
}

std::string head_label(int k, int n_head) { return std::to_string(k / n_head) + "." + std::to_string(k % n_head); }

}  // namespace mhaviz::gui
