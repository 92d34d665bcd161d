#include <CLI/CLI.hpp>
#include <iostream>

#include "cli.hpp"
#include "mhaviz/export.hpp"

namespace mhaviz::cli {

void add_export(CLI::App& app, ExportOptions& o) {
  auto* sub = app.add_subcommand("export", "Write one tensor of a session as LaTeX bmatrix, CSV or NumPy .npy");
  sub->add_option("session", o.session, "Session file, - for standard input, or a built-in lesson name")->required();
  sub->add_option("--tensor", o.tensor,
                  "Tensor name, as in `mhaviz dump` (plus attn_scores_masked, attn_scores_scaled)")
      ->required();
  sub->add_option("--format", o.format, "latex, csv or npy")->required();
  sub->add_option("--select", o.select, "Leading indices picking one matrix, e.g. --select 0,1 for batch 0, head 1")
      ->delimiter(',');
  sub->add_option("--decimals", o.decimals, "Decimals in LaTeX")->capture_default_str();
  sub->add_option("-o,--output", o.output, "Output file (written atomically); default: standard output");
  sub->add_flag("--eval", o.eval, "Evaluation mode: no dropout");
}

int run_export(const ExportOptions& o) {
  try {
    if (o.format != "latex" && o.format != "csv" && o.format != "npy")
      return usage_error("--format: '" + o.format + "' is not one of latex, csv, npy");
    if (o.decimals < 0 || o.decimals > 9)
      return usage_error("--decimals: " + std::to_string(o.decimals) + " is out of range [0, 9]");
    Session s = load_session(o.session);
    if (o.eval) s.model.training = false;
    const Model model = build_model(s.model, s.d_in());
    const Trace trace = forward(model, s.input_tensor());
    const auto all = exportable_tensors(model, trace);
    const Tensor* t = nullptr;
    for (const auto& nt : all)
      if (nt.name == o.tensor) t = &nt.tensor;
    if (!t) {
      std::string names;
      for (const auto& nt : all) names += (names.empty() ? "" : ", ") + nt.name;
      return usage_error("--tensor: '" + o.tensor + "' is not a tensor of this session (one of: " + names + ")");
    }
    std::string text;
    if (o.format == "npy") {
      text = o.select.empty() ? to_npy(*t) : to_npy(select_matrix(*t, o.select, o.tensor));
    } else if (o.format == "csv" && o.select.empty()) {
      // Leading dimensions stacked as rows: (…, rows, cols) -> (prod(…)·rows, cols).
      text = to_csv(t->ptr(), t->numel() / t->shape.back(), t->shape.back());
    } else {
      const Tensor m = select_matrix(*t, o.select, o.tensor);
      text = o.format == "csv"
                 ? to_csv(m.ptr(), m.shape[0], m.shape[1])
                 : to_latex(m.ptr(), static_cast<int>(m.shape[0]), static_cast<int>(m.shape[1]), o.decimals);
    }
    return write_output(o.output, text);
  } catch (const SessionError& e) {
    return usage_error(e.what());
  }
}

}  // namespace mhaviz::cli
