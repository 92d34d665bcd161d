// Command-line flags of `mhaviz gui`.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "gui.hpp"
#include "walk_spec.hpp"

namespace mhaviz::gui {

void add_options(CLI::App& sub, Options& opts) {
  sub.add_option("session", opts.session,
                 "Session file (.json), '-' for standard input, or a built-in lesson name "
                 "(default: restore the autosaved session, else the seed-003 lesson)");
  sub.add_flag("--frame-stats", opts.frame_stats,
               "Measure frame times; the last line printed is frame_median_ms=... frame_p95_ms=...");
  sub.add_option("--exit-after-frames", opts.exit_after_frames, "Quit after N frames (without asking)")
      ->check(CLI::NonNegativeNumber);
  sub.add_flag("--perturb", opts.perturb, "Change one input value every frame (forces recompute and upload)");
  sub.add_flag("--no-heatmaps", opts.no_heatmaps, "Hide the heatmaps (baseline for --frame-stats)");
  sub.add_flag("--check-gl", opts.check_gl, "Exit with status 3 on the first OpenGL error");
  sub.add_flag("--no-restore", opts.no_restore, "Do not restore the autosaved session");
  sub.add_flag("--hide-cell-values", opts.hide_cell_values, "Never print values inside heatmap cells");
  sub.add_flag("--ignore-mouse", opts.ignore_mouse, "Treat the pointer as outside the window (clean screenshots)");
  sub.add_option("--width", opts.width, "Window width in pixels")->check(CLI::Range(320, 16384));
  sub.add_option("--height", opts.height, "Window height in pixels")->check(CLI::Range(240, 16384));
  sub.add_option("--screenshot", opts.screenshot,
                 "Write a PNG of the window (and FILE.json describing the heatmap cells) at the last frame");
  sub.add_option("--state-out", opts.state_out,
                 "Write the app state as JSON while it runs (when it changed, at most every 0.15 s) and on exit");
  sub.add_option("--layout-out", opts.layout_out, "Write widget rectangles as JSON once the UI has settled");
  sub.add_option("--config-dir", opts.config_dir, "Settings directory (default $XDG_CONFIG_HOME/mhaviz)");
  sub.add_option("--state-dir", opts.state_dir, "Autosave directory (default $XDG_STATE_HOME/mhaviz)");
  sub.add_flag("--capture-sidecars", opts.capture_sidecars,
               "Each figure captured also writes FILE.json: its primitives, heatmaps and hits (for tests that compare "
               "a capture with the screen)");
  sub.add_flag("--capture-on-exit", opts.capture_on_exit,
               "Capture what is shown, as F12 does, on the last frame (with --exit-after-frames)");
  sub.add_option("--capture-dir", opts.capture_dir,
                 "Folder for captures and exports (default $XDG_PICTURES_DIR/mhaviz, else ~/Pictures/mhaviz)");
  sub.add_option("--stage", opts.stage, "Initial stage")
      ->check(CLI::IsMember({"scores", "masked", "scaled", "weights", "dropped"}));
  sub.add_option("--batch", opts.batch, "Initial batch item shown")->check(CLI::NonNegativeNumber);
  sub.add_option("--head", opts.head, "Show this head enlarged")->check(CLI::NonNegativeNumber);
  sub.add_option("--colormap", opts.colormap, "Colormap for weights")
      ->check(CLI::IsMember({"viridis", "cividis", "magma", "diverging"}));
  sub.add_flag("--log-scale", opts.log_scale, "Logarithmic colour scale for weights");
  sub.add_option("--theme", opts.theme, "Theme")->check(CLI::IsMember({"dark", "light"}));
  sub.add_option("--font-size", opts.font_size, "Font size in pixels")->check(CLI::Range(10.0f, 48.0f));
  sub.add_option("--model", opts.model,
                 "A trained model to open in the model view: a Hugging Face GPT-2 folder or the book's GPTModel, or its "
                 ".safetensors file; or a Qwen3, Qwen2, Llama or Gemma 3 folder");
  sub.add_option("--text", opts.text, "Text for the model (tokenized with its tokenizer)");
  sub.add_flag("--prepend-eot", opts.prepend_eot, "Put <|endoftext|> before the text, as TransformerLens does");
  sub.add_option("--model-head", opts.model_head,
                 "Show head LAYER.HEAD (e.g. 5.1) large in the model view (or the Train view)");
  sub.add_option("--detector", opts.detector, "Head detector: previous-token, first-token, duplicate-token, induction");
  sub.add_flag("--train", opts.train, "Open on the Train view (a small GPT trained in the app)");
  sub.add_option("--train-until", opts.train_until,
                 "Make a run of the Train view's default settings at once, train it to step N (0: not at all) and "
                 "pause; with --exit-after-frames the last frame waits for it")
      ->check(CLI::Range(0LL, 1000000LL));
  sub.add_option("--kv-step", opts.kv_step,
                 "Open on the KV cache view: the prefill P and the step S shown (0: the prefill), as P or P,S")
      ->check([](const std::string& v) {
        int p = 0, st = 0;
        char extra = 0;
        const int n = std::sscanf(v.c_str(), "%d,%d%c", &p, &st, &extra);
        return (n == 1 || n == 2) && p >= 1 && st >= 0 ? std::string() : "--kv-step: '" + v + "' is not P or P,S";
      });
  sub.add_option("--model-ablate", opts.model_ablate,
                 "Ablate heads LAYER.HEAD in the model view, e.g. 5.1,6.9 (':mean': by their mean, not zero)");
  sub.add_flag("--norm-weighted", opts.norm_weighted, "Show the model view's attention norm-weighted (α·‖f(x)‖)");
  sub.add_option("--walkthrough", opts.walkthrough,
                 "Open the walkthrough at STEP (name or number; STEP+0.5 is halfway into the next step), "
                 "then comma-separated: mistake, compare (the Compare variants tab: wrapper vs weight split), "
                 "variants (the same tab: GQA, MQA, MLA, SWA against MHA), pane=q|k|v|all, pin=FLAT, play, "
                 "no-numbers, no-weights")
      ->check(CLI::Validator(
          [](std::string& spec) {
            try {
              parse_walk_spec(spec);
            } catch (const std::invalid_argument& e) {
              return std::string(e.what()).substr(std::string("--walkthrough: ").size());
            }
            return std::string();
          },
          "SPEC"));
}

}  // namespace mhaviz::gui
