// mhaviz: subcommand dispatch. `mhaviz` and `mhaviz SESSION` open the desktop app.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/cli_train.hpp"
#include "mhaviz/kernel_tuning.hpp"
#include "mhaviz/session.hpp"
#include "settings_dir.hpp"
#ifdef MHAVIZ_WITH_GUI
#include "gui/gui.hpp"
#endif

namespace {

// Arguments that the top level handles itself; anything else is the GUI's.
bool is_top_level(const char* arg) {
  for (const char* s : {"gui", "dump", "patch", "lens", "export", "render", "bench", "calibrate", "train", "kv-memory",
                        "lessons", "-h", "--help", "--version"})
    if (std::strcmp(arg, s) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // `mhaviz` alone and `mhaviz SESSION ...` mean `mhaviz gui ...`.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || !is_top_level(args.front().c_str())) args.insert(args.begin(), "gui");
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector

  CLI::App app{"mhaviz: see multi-head attention compute, head by head, exactly as PyTorch does", "mhaviz"};
  app.set_version_flag("--version", std::string("mhaviz ") + MHAVIZ_VERSION);
  app.require_subcommand(1);

  mhaviz::cli::DumpOptions dump;
  mhaviz::cli::add_dump(app, dump);
  mhaviz::cli::PatchOptions patch;
  mhaviz::cli::add_patch(app, patch);
  mhaviz::cli::LensOptions lens;
  mhaviz::cli::add_lens(app, lens);
  mhaviz::cli::ExportOptions exp;
  mhaviz::cli::add_export(app, exp);
  mhaviz::cli::RenderOptions render;
  mhaviz::cli::add_render(app, render);
  mhaviz::cli::BenchOptions bench;
  mhaviz::cli::add_bench(app, bench);
  mhaviz::cli::CalibrateOptions calibrate;
  mhaviz::cli::add_calibrate(app, calibrate);
  mhaviz::cli::TrainOptions train;
  mhaviz::cli::add_train(app, train);
  mhaviz::cli::KvMemoryOptions kv_memory;
  mhaviz::cli::add_kv_memory(app, kv_memory);
  auto* lessons = app.add_subcommand("lessons", "List the built-in lessons (usable wherever a session is expected)");
#ifdef MHAVIZ_WITH_GUI
  auto* gui = app.add_subcommand("gui", "Open the desktop app on a session (default: the seed003-wrapper lesson)");
  mhaviz::gui::Options gui_options;
  mhaviz::gui::add_options(*gui, gui_options);
#else
  auto* gui = app.add_subcommand("gui", "Open the desktop app (not built in this configuration)");
#endif

  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& ch : what)
      if (ch == '\n') ch = ' ';
    return mhaviz::cli::usage_error(what + " (see mhaviz --help)");
  }

  // The commands that run forwards read (or calibrate once) the kernel sizes kept beside the
  // app's settings; the app sets its own --config-dir's.
  for (const char* sub : {"dump", "patch", "lens", "render", "bench"})
    if (app.got_subcommand(sub)) mhaviz::set_kernel_cache(mhaviz::kernel_cache_file(""));
  if (app.got_subcommand("calibrate")) return mhaviz::cli::run_calibrate(calibrate);
  if (app.got_subcommand("dump")) return mhaviz::cli::run_dump(dump);
  if (app.got_subcommand("patch")) return mhaviz::cli::run_patch(patch);
  if (app.got_subcommand("lens")) return mhaviz::cli::run_lens(lens);
  if (app.got_subcommand("export")) return mhaviz::cli::run_export(exp);
  if (app.got_subcommand("render")) return mhaviz::cli::run_render(render);
  if (app.got_subcommand("bench")) return mhaviz::cli::run_bench(bench);
  if (app.got_subcommand("train")) return mhaviz::cli::run_train(train);
  if (app.got_subcommand("kv-memory")) return mhaviz::cli::run_kv_memory(kv_memory);
  if (lessons->parsed()) {
    for (const auto& l : mhaviz::lessons()) std::cout << l.name << "  " << l.description << "\n";
    return 0;
  }
#ifdef MHAVIZ_WITH_GUI
  if (gui->parsed()) return mhaviz::gui::run(gui_options);
#else
  if (gui->parsed())
    return mhaviz::cli::usage_error("gui: this build has no desktop app (configure with -DMHAVIZ_GUI=ON)");
#endif
  return 0;
}
