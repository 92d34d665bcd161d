// `mhaviz render --model --view sweep | patch | lens`: the interventions' figures
// (figure/interv_figures.hpp) of a trained GPT, the same the app captures.
#include <stdexcept>

#include "cli.hpp"
#include "figure/gpt_figures.hpp"
#include "figure/interv_figures.hpp"
#include "mhaviz/gpt_interventions.hpp"

namespace mhaviz::cli {

figure::Figure build_interv_render(const RenderOptions& o, figure::Options fo) {
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
  ModelInput in = load_model_input(o.model);
  const GptModel& m = in.model;
  const std::vector<std::string> tokens = figure::display_tokens(in.tokenizer, in.ids);
  const GptTrace clean = gpt_forward(m, in.ids);
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
  const std::vector<int> corrupt_ids = text_ids(in.tokenizer, m, o.corrupt, "--corrupt");
  if (corrupt_ids.size() != in.ids.size())
    throw std::invalid_argument("--corrupt: " + std::to_string(corrupt_ids.size()) + " tokens, the clean text has " +
                                std::to_string(in.ids.size()) + " (patching needs equally many)");
  const GptTrace corrupt = gpt_forward(m, corrupt_ids);
  const PatchPer per = o.per == "head" ? PatchPer::Head : PatchPer::LayerPosition;
  const auto g = patch_sweep(m, clean, corrupt, metric, per);
  return figure::build_grid_figure(figure::patch_view(m, *g, in.tokenizer, metric, per, tokens,
                                                      figure::display_tokens(in.tokenizer, corrupt_ids), o.model.path),
                                   fo);
}

}  // namespace mhaviz::cli
