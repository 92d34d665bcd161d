// Ablation, patching, the logit lens and norm-weighted attention on a Qwen, Llama or Gemma 3
// forward (hf_interventions.hpp), on hf_forward.cpp's own layer code (hf_block.hpp).
#include "mhaviz/hf_interventions.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "hf_block.hpp"
#include "interventions_on.hpp"
#include "kernels/linear.hpp"
#include "kernels/rms_norm.hpp"

namespace mhaviz {
namespace {

detail::InterventionShape shape_of(const HfConfig& c) {
  return {c.num_hidden_layers, c.num_attention_heads, c.vocab_size};
}

// Layers [from, L) of out over every row from base's residual before `from`, with iv's
// edits; then the final norm and the last logits. out's layers before `from` are left as they are.
void run_from(const HfModel& m, const HfTrace& base, const HfIntervention& iv, int from, HfTrace& out) {
  const bool kernel = base.backend != Backend::OpenBlas;
  detail::hf_shape_trace(m, base.ids, 0, out);
  const detail::HfEdits edits{[&iv](int layer, HfLayerTrace& L) { detail::edit_context(iv, layer, L.context); },
                              [&iv](int layer, HfLayerTrace& L) { detail::edit_resid(iv, layer, L.resid); }};
  if (from > 0) {
    // Layer from − 1's residual is what layer from reads: base's.
    const Tensor& in = base.layers[static_cast<std::size_t>(from - 1)].resid;
    out.layers[static_cast<std::size_t>(from - 1)].resid.data = in.data;
  }
  detail::hf_layer_rows(m, out.ids, from, 0, out, kernel, &edits);
  out.backend = base.backend;
  out.recomputed_from = 0;
  out.logits_last.shape = {m.config.vocab_size};
  out.logits_last.data.resize(static_cast<std::size_t>(m.config.vocab_size));
  detail::hf_head_rows(m, out.final_norm.ptr() + static_cast<std::int64_t>(out.tokens() - 1) * m.config.hidden_size, 1,
                       out.logits_last.data.data(), kernel);
}

auto runner(const HfModel& m, const HfTrace& base) {
  return [&m, &base](const HfIntervention& iv, HfTrace& out) {
    run_from(m, base, iv, iv.first_layer(m.config.num_hidden_layers), out);
  };
}

void check_run(const HfModel& m, const HfTrace& tr, const char* what) {
  if (tr.tokens() == 0 || tr.layers.size() != m.blocks.size())
    throw std::invalid_argument(std::string(what) + ": the run is not a forward of this model");
}

}  // namespace

void check_intervention(const HfModel& m, const HfTrace& base, const HfIntervention& iv) {
  detail::check_intervention_on(shape_of(m.config), base, iv);
}

void hf_forward_intervened(const HfModel& m, const HfTrace& base, const HfIntervention& iv, HfTrace& out) {
  if (&out == &base) throw std::invalid_argument("hf_forward_intervened: out is the run it edits");
  check_run(m, base, "hf_forward_intervened");
  check_intervention(m, base, iv);
  const int from = iv.first_layer(m.config.num_hidden_layers);
  out.layers.resize(base.layers.size());
  for (int l = 0; l < from; ++l) out.layers[static_cast<std::size_t>(l)] = base.layers[static_cast<std::size_t>(l)];
  run_from(m, base, iv, from, out);
}

HfTrace hf_forward_intervened(const HfModel& m, const HfTrace& base, const HfIntervention& iv) {
  HfTrace out;
  hf_forward_intervened(m, base, iv, out);
  return out;
}

std::optional<InterventionGrid> ablation_sweep(const HfModel& m, const HfTrace& clean, const TokenMetric& metric,
                                               AblationMode mode, const SweepProgress& progress) {
  check_run(m, clean, "sweep");
  return detail::ablation_sweep_on(shape_of(m.config), clean, metric, mode, runner(m, clean), progress);
}

std::optional<InterventionGrid> patch_sweep(const HfModel& m, const HfTrace& clean, const HfTrace& corrupt,
                                            const TokenMetric& metric, PatchPer per, const SweepProgress& progress) {
  check_run(m, clean, "patch");
  check_run(m, corrupt, "patch");
  return detail::patch_sweep_on(shape_of(m.config), clean, corrupt, metric, per, runner(m, corrupt), progress);
}

namespace {

// lens_logits into logits (resized to (T, V); a lens of every layer reuses its pages).
void lens_into(const HfModel& m, const HfTrace& tr, int layer, std::vector<float>& logits) {
  const HfConfig& c = m.config;
  detail::check_layer(tr.layers.size(), layer, "lens");
  const int T = tr.tokens();
  std::vector<float> normed(static_cast<std::size_t>(T) * static_cast<std::size_t>(c.hidden_size));
  detail::rms_norm(tr.layers[static_cast<std::size_t>(layer)].resid.ptr(), normed.data(), T, c.hidden_size,
                   m.final_norm.data(), c.rms_norm_eps,
                   c.gemma_norms ? detail::RmsWeight::OnePlus : detail::RmsWeight::Plain);
  logits.resize(static_cast<std::size_t>(T) * static_cast<std::size_t>(c.vocab_size));
  detail::hf_head_rows(m, normed.data(), T, logits.data(), tr.backend != Backend::OpenBlas);
}

}  // namespace

std::vector<float> lens_logits(const HfModel& m, const HfTrace& tr, int layer) {
  std::vector<float> logits;
  lens_into(m, tr, layer, logits);
  return logits;
}

LogitLens logit_lens(const HfModel& m, const HfTrace& tr, int k, int target) {
  check_run(m, tr, "lens");
  return detail::logit_lens_on(shape_of(m.config), tr.tokens(), k, target,
                               [&](int layer, std::vector<float>& logits) { lens_into(m, tr, layer, logits); });
}

Tensor norm_weighted_attention(const HfModel& m, const HfTrace& tr, int layer) {
  const HfConfig& c = m.config;
  detail::check_layer(tr.layers.size(), layer, "norm-weighted");
  const HfLayerTrace& L = tr.layers[static_cast<std::size_t>(layer)];
  return detail::norm_weighted_on(L.weights, L.v, detail::linear_weight(m.blocks[static_cast<std::size_t>(layer)].o),
                                  c.hidden_size);
}

}  // namespace mhaviz
