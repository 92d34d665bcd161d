// The model view's data (see model_view.hpp).
#include "model_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "figure/gpt_figures.hpp"
#include "figure/interv_figures.hpp"
#include "mhaviz/model_kinds.hpp"
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
namespace {

// Where the view keeps an ablated run of either model kind.
std::shared_ptr<const GptTrace>& ablated_of(const GptModel&, ModelViewData& d) { return d.ablated; }
std::shared_ptr<const HfTrace>& ablated_of(const HfModel&, ModelViewData& d) { return d.hf_ablated; }
const std::shared_ptr<const GptTrace>& ablated_of(const GptModel&, const ModelViewData& d) { return d.ablated; }
const std::shared_ptr<const HfTrace>& ablated_of(const HfModel&, const ModelViewData& d) { return d.hf_ablated; }

// Mean over positions 0 .. T-2 of −log p(ids[i + 1]): the last layer's lens is the LM head on
// every row, bit for bit the model's logits, in one product.
template <class Model, class Trace>
double loss_on_text(const Model& m, const Trace& tr) {
  const int T = tr.tokens(), V = model_vocab(m);
  if (T < 2) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<float> logits = lens_logits(m, tr, model_layers(m) - 1);
  double sum = 0.0;
  for (int i = 0; i + 1 < T; ++i) {
    const TokenMetric next{tr.ids[static_cast<std::size_t>(i + 1)], -1};
    sum -= next.of(
        std::span<const float>(logits.data() + static_cast<std::ptrdiff_t>(i) * V, static_cast<std::size_t>(V)));
  }
  return sum / (T - 1);
}

}  // namespace

double text_loss(const GptModel& m, const GptTrace& tr) { return loss_on_text(m, tr); }
double text_loss(const HfModel& m, const HfTrace& tr) { return loss_on_text(m, tr); }

namespace {

// The run key shows: the clean forward, or (heads ablated) its ablated run, reused from prev.
template <class Model>
auto shown_run(const Model& m, const GptWorker::Result& r, const ModelViewKey& key, const ModelViewData* same_run) {
  using Trace = std::remove_cvref_t<decltype(r.clean(m))>;
  if (same_run != nullptr) return std::shared_ptr<const Trace>(ablated_of(m, *same_run));
  InterventionOn<Trace> iv;
  iv.ablate = key.ablate;
  iv.mode = key.ablation_mode;
  return std::make_shared<const Trace>(model_forward_intervened(m, r.clean(m), iv));
}

// The next tokens after position pos of tr, with each one's p in the clean run.
template <class Model, class Trace>
std::vector<NextRow> next_rows(const Model& m, const Tokenizer& tok, const Trace& tr, const Trace& clean, int pos) {
  const NextToken nt = next_token_from_logits(model_logits(m, tr, pos), 5);
  const NextToken base = &tr == &clean ? nt : next_token_from_logits(model_logits(m, clean, pos), 0);
  std::vector<NextRow> out;
  for (const TokenProbability& t : nt.top)
    out.push_back({t.id, figure::display_tokens(tok, {t.id}).front(), t.p, std::log(static_cast<double>(t.p)),
                   base.probs[static_cast<std::size_t>(t.id)]});
  return out;
}

// The lens table of tr, with key.lens_target's rank after each layer at key.lens_position;
// reused from same_run (the view shown, of the same run) when it ranked the same.
template <class Model, class Trace>
void lens_of(ModelViewData& d, const Model& m, const Tokenizer& tok, const Trace& tr, const std::string& path,
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

// The view of r (a forward of m) for key, reusing what prev computed for the same forward.
template <class Model>
std::shared_ptr<const ModelViewData> derive_view(const Model& m, std::shared_ptr<const GptWorker::Result> r,
                                                 const ModelViewKey& key, std::shared_ptr<const ModelViewData> prev) {
  const Tokenizer& tok = *r->loaded.tokenizer;
  const auto& clean = r->clean(m);
  auto d = std::make_shared<ModelViewData>();
  d->key = key;
  d->result = r;
  d->n_layer = r->loaded.facts.layers;
  d->n_head = r->loaded.facts.heads;
  // What the view shown computed for this forward stays: scoring and pooling 144 heads of
  // 1024 x 1024 weights take tens of milliseconds.
  const bool same_run =
      prev && prev->result == r && prev->key.ablate == key.ablate && prev->key.ablation_mode == key.ablation_mode;
  const bool same = same_run && prev->key.norm_weighted == key.norm_weighted;
  auto& ablated = ablated_of(m, *d);
  if (!key.ablate.empty()) ablated = shown_run(m, *r, key, same_run ? prev.get() : nullptr);
  const auto& tr = ablated ? *ablated : clean;
  d->tokens = tr.tokens();
  d->ids = tr.ids;
  if (same && prev->key.pattern == key.pattern) {
    d->view = prev->view;
    d->top = prev->top;
    d->norm_weights = prev->norm_weights;
  } else {
    std::optional<HeadPattern> pattern;
    if (key.pattern >= 0 && key.pattern < kHeadPatternCount) pattern = kHeadPatterns[key.pattern];
    d->view = figure::model_view_of(m, tr, tok, r->loaded.path.string(), pattern);
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
    d->next = next_rows(m, tok, tr, clean, d->position);
  if (ablated) {
    d->loss = same_run ? prev->loss : text_loss(m, tr);
    d->clean_loss = prev && prev->result == r && !std::isnan(prev->clean_loss) ? prev->clean_loss : text_loss(m, clean);
  }
  if (key.lens) lens_of(*d, m, tok, tr, r->loaded.path.string(), same_run ? prev.get() : nullptr);
  d->next_shown = shown_percentages(d->next);
  return d;
}

}  // namespace

std::shared_ptr<const ModelViewData> derive_model_view(std::shared_ptr<const GptWorker::Result> r,
                                                       const ModelViewKey& key,
                                                       std::shared_ptr<const ModelViewData> prev) {
  if (r->loaded.hf) return derive_view(*r->loaded.hf, r, key, std::move(prev));
  return derive_view(*r->loaded.model, r, key, std::move(prev));
}

figure::Figure model_figure_for(const ModelViewData& d, const figure::Options& o) {
  figure::ModelView v = d.view;
  v.thumbs = &d.thumbs;
  return figure::build_model_figure(v, o);
}

std::string head_label(int k, int n_head) { return std::to_string(k / n_head) + "." + std::to_string(k % n_head); }

}  // namespace mhaviz::gui
