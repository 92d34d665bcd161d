// `mhaviz render --model --view sweep | patch | lens`: the interventions' figures
// (figure/interv_figures.hpp) of a trained GPT, or of a Qwen, Llama or Gemma 3 folder, the same
// the app captures.
#include <stdexcept>

#include "cli.hpp"
#include "figure/gpt_figures.hpp"
#include "figure/interv_figures.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/hf_interventions.hpp"

namespace mhaviz::cli {
namespace {

void check_interv_options(const RenderOptions& o) {
  const std::string& kind = o.view.front();
  if (o.view.size() > 1) throw std::invalid_argument("--view: " + kind + " takes no argument, got '" + o.view[1] + "'");
  if (!o.detector.empty()) throw std::invalid_argument("--detector: only with --view model");
  if (kind != "patch" && !o.corrupt.empty()) throw std::invalid_argument("--corrupt: only with --view patch");
  if (o.per != "head" && o.per != "layer-position")
    throw std::invalid_argument("--per: '" + o.per + "' is not head or layer-position");
  if (o.ablation != "zero" && o.ablation != "mean")
    throw std::invalid_argument("--ablation: '" + o.ablation + "' is not zero or mean");
  if (kind != "lens" && o.target.empty())
    throw std::invalid_argument("--target: --view " + kind + " needs the token judged");
}

// in: a loaded model, its tokenizer and the --text's ids (ModelInput or HfModelInput);
// forward(ids) its trace; limits what the corrupted text may be.
template <class Input, class Forward>
figure::Figure interv_render(const RenderOptions& o, const figure::Options& fo, const Input& in, PromptLimits limits,
                             const Forward& forward) {
  const std::string& kind = o.view.front();
  const auto& m = in.model;
  const std::vector<std::string> tokens = figure::display_tokens(in.tokenizer, in.ids);
  const auto clean = forward(in.ids);
  if (kind == "lens") {
    const int target = o.target.empty() ? -1 : one_token(in.tokenizer, o.target, "--target");
    const int T = clean.tokens();
    if (o.position >= T || o.position < -1 || (o.position >= 0 && target < 0))
      throw std::invalid_argument("--position: " + std::to_string(o.position) +
                                  (target < 0 ? " needs --target (the token ranked)"
                                              : " is not a position of the text's " + std::to_string(T) + " tokens"));
    const LogitLens lens = logit_lens(m, clean, 1, target);
    return figure::build_grid_figure(
        figure::lens_view(m, lens, in.tokenizer, tokens, o.model.path, o.position < 0 ? T - 1 : o.position), fo);
  }
  if (o.position != -1) throw std::invalid_argument("--position: only with --view lens");
  const TokenMetric metric{one_token(in.tokenizer, o.target, "--target"),
                           o.vs.empty() ? -1 : one_token(in.tokenizer, o.vs, "--vs")};
  if (kind == "sweep") {
    const AblationMode mode = o.ablation == "mean" ? AblationMode::Mean : AblationMode::Zero;
    const auto g = ablation_sweep(m, clean, metric, mode);
    return figure::build_grid_figure(figure::sweep_view(m, *g, in.tokenizer, metric, mode, tokens, o.model.path), fo);
  }
  if (o.corrupt.empty()) throw std::invalid_argument("--corrupt: --view patch needs the corrupted text");
  // Encoded as the clean text is (with the special tokens it has).
  const std::vector<int> corrupt_ids = text_ids(in.tokenizer, limits, prompt_options(o.model), o.corrupt, "--corrupt");
  if (corrupt_ids.size() != in.ids.size())
    throw std::invalid_argument("--corrupt: " + std::to_string(corrupt_ids.size()) + " tokens, the clean text has " +
                                std::to_string(in.ids.size()) + " (patching needs equally many)");
  const auto corrupt = forward(corrupt_ids);
  const PatchPer per = o.per == "head" ? PatchPer::Head : PatchPer::LayerPosition;
  const auto g = patch_sweep(m, clean, corrupt, metric, per);
  return figure::build_grid_figure(figure::patch_view(m, *g, in.tokenizer, metric, per, tokens,
                                                      figure::display_tokens(in.tokenizer, corrupt_ids), o.model.path),
                                   fo);
}

}  // namespace

figure::Figure build_interv_render(const RenderOptions& o, figure::Options fo) {
  check_interv_options(o);
  if (is_hf_model_folder(o.model.path)) {
    const HfModelInput in = load_hf_model_input(o.model);
    return interv_render(o, fo, in, hf_limits(in.model),
                         [&](const std::vector<int>& ids) { return hf_forward(in.model, ids); });
  }
  const ModelInput in = load_model_input(o.model);
  return interv_render(o, fo, in, {in.model.config.n_ctx, in.model.config.vocab_size},
                       [&](const std::vector<int>& ids) { return gpt_forward(in.model, ids); });
}

}  // namespace mhaviz::cli
