#include <CLI/CLI.hpp>
#include <iostream>

#include "cli.hpp"
#include "mhaviz/dump.hpp"

namespace mhaviz::cli {

int usage_error(const std::string& message) {
  std::cerr << "mhaviz: " << message << "\n";
  return 2;
}

void add_dump(CLI::App& app, DumpOptions& o) {
  auto* sub = app.add_subcommand("dump", "Write every parameter and intermediate tensor of a session as JSON");
  sub->add_option("session", o.session, "Session file, - for standard input, or a built-in lesson name")->required();
  sub->add_option("-o,--output", o.output, "Output file (written atomically); default: standard output");
  sub->add_flag("--eval", o.eval, "Evaluation mode: no dropout, whatever the session says");
}

int run_dump(const DumpOptions& o) {
  try {
    Session s = load_session(o.session);
    if (o.eval) s.model.training = false;
    const Model model = build_model(s.model, s.d_in());
    const Trace trace = forward(model, s.input_tensor());
    const std::string text = dump_json(s, model, trace);
    if (o.output.empty() || o.output == "-") {
      std::cout << text;
      std::cout.flush();
      if (!std::cout) return usage_error("output: cannot write to standard output");
    } else {
      write_file_atomic(o.output, text);
    }
  } catch (const SessionError& e) {
    return usage_error(e.what());
  }
  return 0;
}

}  // namespace mhaviz::cli
