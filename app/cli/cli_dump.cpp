#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "cli.hpp"
#include "mhaviz/dump.hpp"
#include "mhaviz/hf_interventions.hpp"

namespace mhaviz::cli {

int usage_error(const std::string& message) {
  std::cerr << "mhaviz: " << message << "\n";
  return 2;
}

int write_output(const std::string& output, const std::string& text) {
  if (!output.empty() && output != "-") {
    write_file_atomic(output, text);
    return 0;
  }
  std::cout << text;
  std::cout.flush();
  return std::cout ? 0 : usage_error("output: cannot write to standard output");
}

void add_dump(CLI::App& app, DumpOptions& o) {
  auto* sub = app.add_subcommand("dump", "Write every parameter and intermediate tensor of a session as JSON");
  sub->add_option("session", o.session, "Session file, - for standard input, or a built-in lesson name (or --model)");
  add_model_options(*sub, o.model, true);
  sub->add_option("-o,--output", o.output, "Output file (written atomically); default: standard output");
  sub->add_flag("--eval", o.eval, "Evaluation mode: no dropout, whatever the session says");
  sub->add_option("--ablate", o.ablate,
                  "With --model: heads LAYER.HEAD whose output is removed before the output projection, e.g. "
                  "5.1,6.9; ':mean' replaces it by its mean over the positions instead of zero");
  sub->add_option("--decode-from", o.decode_from,
                  "Prefill P rows, then decode the others one at a time through a KV cache: the same output, and "
                  "the cache's shape after every step (needs dropout off: --eval)");
}

namespace {

// A trained model's forward on --text or --ids: every layer's attention and the last logits.
std::string dump_model(const ModelOptions& o, const std::string& ablate) {
  const std::optional<Intervention> ablation = ablate.empty() ? std::nullopt : std::optional(parse_ablation(ablate));
  if (is_hf_model_folder(o.path)) {
    const HfModelInput in = load_hf_model_input(o);
    const HfTrace trace = hf_forward(in.model, in.ids);
    if (!ablation) return hf_dump_json(in.model, in.tokenizer, trace);
    HfIntervention iv;
    iv.ablate = ablation->ablate;
    iv.mode = ablation->mode;
    return hf_dump_json(in.model, in.tokenizer, hf_forward_intervened(in.model, trace, iv), 5, &iv);
  }
  const ModelInput in = load_model_input(o);
  const GptTrace trace = gpt_forward(in.model, in.ids);
  if (!ablation) return gpt_dump_json(in.model, in.tokenizer, trace);
  return gpt_dump_json(in.model, in.tokenizer, gpt_forward_intervened(in.model, trace, *ablation), 5, &*ablation);
}

}  // namespace

int write_made_output(const std::string& output, const std::function<std::string()>& make) {
  try {
    return write_output(output, make());
  } catch (const SessionError& e) {
    return usage_error(e.what());
  } catch (const LoadError& e) {
    return usage_error(e.what());
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
}

int run_dump(const DumpOptions& o) {
  const bool model = !o.model.path.empty();
  if (model && !o.session.empty()) return usage_error("session: give a SESSION or --model, not both");
  if (!model && o.session.empty())
    return usage_error("session: give a SESSION (a file, - or a lesson name) or --model PATH");
  if (!model && (o.model.text || !o.model.ids.empty() || o.model.prepend_eot || o.model.no_special))
    return usage_error("--text: --text, --ids, --prepend-eot and --no-special-tokens need --model");
  if (!model && !o.ablate.empty()) return usage_error("--ablate: needs --model");
  if (model && o.decode_from) return usage_error("--decode-from: needs a SESSION, not --model");
  return write_made_output(o.output, [&] {
    if (model) return dump_model(o.model, o.ablate);
    Session s = load_session(o.session);
    if (o.eval) s.model.training = false;
    const Model m = build_model(s.model, s.d_in());
    if (o.decode_from) return decode_dump_json(s, m, decode_with_cache(m, s.input_tensor(), *o.decode_from));
    const Trace trace = forward(m, s.input_tensor());
    return dump_json(s, m, trace);
  });
}

}  // namespace mhaviz::cli
