// Ablation, patching, the logit lens and norm-weighted attention (gpt_interventions.hpp) on
// the blocks of gpt_forward.cpp (gpt_block.hpp).
//
// [SECTION] checking an intervention
// [SECTION] the intervened forward
// [SECTION] sweeps
// [SECTION] logit lens
// [SECTION] norm-weighted attention
// [SECTION] parsing
#include "mhaviz/gpt_interventions.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "gpt_block.hpp"
#include "interventions_on.hpp"

namespace mhaviz {
namespace {

using detail::head_rows;

detail::InterventionShape shape_of(const GptConfig& c) { return {c.n_layer, c.n_head, c.vocab_size}; }

}  // namespace

// [SECTION] checking an intervention

void check_intervention(const GptConfig& c, const GptTrace& base, const Intervention& iv) {
  detail::check_intervention_on(shape_of(c), base, iv);
}

// [SECTION] the intervened forward

namespace {

void shape_as(Tensor& t, const Shape& s) {
  if (t.shape != s) t = Tensor(s);
}

// Layers [from, L) of out recomputed over every row from base's residual before `from`, with
// iv's edits; then the final norm and the last logits. out's layers before `from` untouched.
void run_from(const GptModel& m, const GptTrace& base, const Intervention& iv, int from, GptTrace& out) {
  const GptConfig& c = m.config;
  const int T = base.tokens(), C = c.n_embd, H = c.n_head, hd = c.head_dim();
  const bool kernel = base.backend != Backend::OpenBlas;
  out.model = nullptr;
  out.backend = base.backend;
  out.ids = base.ids;
  out.recomputed_from = 0;
  out.layers.resize(base.layers.size());
  const float* in = from == 0 ? base.embeddings.ptr() : base.layers[static_cast<std::size_t>(from - 1)].resid.ptr();
  for (int l = from; l < c.n_layer; ++l) {
    GptLayerTrace& L = out.layers[static_cast<std::size_t>(l)];
    L.mask = gpt_attention_mask(c);
    for (Tensor* t : {&L.x, &L.resid_mid, &L.resid}) shape_as(*t, {1, T, C});
    for (Tensor* t : {&L.q, &L.k, &L.v, &L.context}) shape_as(*t, {1, H, T, hd});
    shape_as(L.weights, {1, H, T, T});
    const detail::ContextEdit edit = [&iv, l](GptLayerTrace& lt) { detail::edit_context(iv, l, lt.context); };
    detail::gpt_block_rows(m, m.blocks[static_cast<std::size_t>(l)], in, L, out, 0, T, kernel, &edit);
    detail::edit_resid(iv, l, L.resid);
    in = L.resid.ptr();
  }
  shape_as(out.final_norm, {1, T, C});
  detail::gpt_final_norm_rows(m, in, out.final_norm.ptr(), T);
  out.logits_last.shape = {c.vocab_size};
  out.logits_last.data = gpt_logits(m, out, T - 1);
}

}  // namespace

void gpt_forward_intervened(const GptModel& m, const GptTrace& base, const Intervention& iv, GptTrace& out) {
  if (&out == &base) throw std::invalid_argument("gpt_forward_intervened: out is the run it edits");
  if (base.tokens() == 0 || base.layers.size() != m.blocks.size())
    throw std::invalid_argument("gpt_forward_intervened: the run to edit is not a forward of this model");
  check_intervention(m.config, base, iv);
  const int from = iv.first_layer(m.config.n_layer);
  out.embeddings = base.embeddings;
  out.layers.resize(base.layers.size());
  for (int l = 0; l < from; ++l) out.layers[static_cast<std::size_t>(l)] = base.layers[static_cast<std::size_t>(l)];
  run_from(m, base, iv, from, out);
}

GptTrace gpt_forward_intervened(const GptModel& model, const GptTrace& base, const Intervention& iv) {
  GptTrace out;
  gpt_forward_intervened(model, base, iv, out);
  return out;
}

// [SECTION] sweeps

double TokenMetric::of(std::span<const float> logits) const {
  const auto at = [&](int id) { return static_cast<double>(logits[static_cast<std::size_t>(id)]); };
  if (vs >= 0) return at(target) - at(vs);
  // log softmax in double: log p = x_t − max − log Σ exp(x − max).
  const double mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  return at(target) - mx - std::log(sum);
}

namespace {

// One intervened run of base for a sweep.
auto runner(const GptModel& m, const GptTrace& base) {
  return [&m, &base](const Intervention& iv, GptTrace& out) {
    run_from(m, base, iv, iv.first_layer(m.config.n_layer), out);
  };
}

}  // namespace

std::optional<InterventionGrid> ablation_sweep(const GptModel& m, const GptTrace& clean, const TokenMetric& metric,
                                               AblationMode mode, const SweepProgress& progress) {
  return detail::ablation_sweep_on(shape_of(m.config), clean, metric, mode, runner(m, clean), progress);
}

std::optional<InterventionGrid> patch_sweep(const GptModel& m, const GptTrace& clean, const GptTrace& corrupt,
                                            const TokenMetric& metric, PatchPer per, const SweepProgress& progress) {
  return detail::patch_sweep_on(shape_of(m.config), clean, corrupt, metric, per, runner(m, corrupt), progress);
}

// [SECTION] logit lens

namespace {

// lens_logits into logits (resized to (T, V); a lens of every layer reuses its pages).
void lens_into(const GptModel& m, const GptTrace& tr, int layer, std::vector<float>& logits) {
  const GptConfig& c = m.config;
  detail::check_layer(tr.layers.size(), layer, "lens");
  const int T = tr.tokens();
  std::vector<float> normed(static_cast<std::size_t>(T) * static_cast<std::size_t>(c.n_embd));
  detail::gpt_final_norm_rows(m, tr.layers[static_cast<std::size_t>(layer)].resid.ptr(), normed.data(), T);
  logits.resize(static_cast<std::size_t>(T) * static_cast<std::size_t>(c.vocab_size));
  detail::gpt_head_rows(m, normed.data(), T, logits.data(), tr.backend);
}

}  // namespace

std::vector<float> lens_logits(const GptModel& m, const GptTrace& tr, int layer) {
  std::vector<float> logits;
  lens_into(m, tr, layer, logits);
  return logits;
}

LogitLens logit_lens(const GptModel& m, const GptTrace& tr, int k, int target) {
  return detail::logit_lens_on(shape_of(m.config), tr.tokens(), k, target,
                               [&](int layer, std::vector<float>& logits) { lens_into(m, tr, layer, logits); });
}

// [SECTION] norm-weighted attention

Tensor norm_weighted_attention(const GptModel& m, const GptTrace& tr, int layer) {
  const GptConfig& c = m.config;
  detail::check_layer(tr.layers.size(), layer, "norm-weighted");
  const GptLayerTrace& L = tr.layers[static_cast<std::size_t>(layer)];
  return detail::norm_weighted_on(L.weights, L.v, gpt_linear_weight(m.blocks[static_cast<std::size_t>(layer)].proj),
                                  c.n_embd);
}

// [SECTION] parsing

Intervention parse_ablation(const std::string& spec) {
  Intervention iv;
  std::string heads = spec;
  if (const auto colon = spec.rfind(':'); colon != std::string::npos) {
    const std::string mode = spec.substr(colon + 1);
    if (mode == "mean")
      iv.mode = AblationMode::Mean;
    else if (mode != "zero")
      throw std::invalid_argument("ablate: mode \"" + mode + "\" is not zero or mean");
    heads = spec.substr(0, colon);
  }
  std::size_t at = 0;
  while (at <= heads.size()) {
    const std::size_t end = std::min(heads.find(',', at), heads.size());
    const std::string part = heads.substr(at, end - at);
    const std::size_t dot = part.find('.');
    auto number = [&](const std::string& s) {
      if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        throw std::invalid_argument("ablate: \"" + part + "\" is not LAYER.HEAD (e.g. 5.1)");
      return std::stoi(s);
    };
    if (dot == std::string::npos) number("");
    iv.ablate.push_back({number(part.substr(0, dot)), number(part.substr(dot + 1))});
    at = end + 1;
  }
  return iv;
}

}  // namespace mhaviz
