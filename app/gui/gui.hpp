// The desktop app: entry points called by app/main.cpp.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace mhaviz::gui {

struct Options {
  std::string session;        // path, "-" (stdin) or built-in lesson name; empty = restore autosave or default lesson
  bool frame_stats = false;   // print frame_median_ms=… frame_p95_ms=… as the last line
  int exit_after_frames = 0;  // > 0: quit (without asking) after this many frames
  bool perturb = false;       // change one input value every frame (recompute + upload)
  bool no_heatmaps = false;   // hide the heatmap grid (baseline for --frame-stats)
  bool check_gl = false;      // a GL error is fatal (exit 3)
  bool no_restore = false;    // do not restore the autosaved session
  bool hide_cell_values = false;  // never print values inside cells (pixel tests)
  bool ignore_mouse = false;      // the pointer is treated as outside the window (clean captures)
  int width = 0, height = 0;      // window size override (default: saved setting, else 1280x800)
  std::string screenshot;         // PNG of the window written at the last frame, + .json sidecar
  std::string state_out;          // JSON state dump written while running (when it changed) and on exit
  std::string layout_out;         // JSON of widget rectangles written once the UI settled (xdotool tests)
  std::string config_dir;         // overrides $XDG_CONFIG_HOME/mhaviz
  std::string state_dir;          // overrides $XDG_STATE_HOME/mhaviz
  std::string capture_dir;        // overrides the capture folder (tests)
  bool capture_sidecars = false;  // each figure capture also writes FILE.json: its display list (tests)
  bool capture_on_exit = false;   // capture what is shown (as F12) on the last frame (tests)
  std::string stage;            // initial stage: scores|masked|scaled|weights|dropped
  int batch = 0;                // initial batch item shown
  int head = -1;                // >= 0: show this head enlarged
  std::string colormap;         // initial colormap override: viridis|cividis|magma|diverging
  std::string theme;            // initial theme override: dark|light
  bool log_scale = false;       // logarithmic colour scale for weights
  float font_size = 0.0f;       // initial font size override (pixels)
  std::string model;            // a trained GPT to open (folder or .safetensors)
  std::string text;             // its text
  bool prepend_eot = false;     // <|endoftext|> first
  std::string model_head;       // L.H: that head large in the model view
  std::string detector;         // previous-token|first-token|duplicate-token|induction
  std::string model_ablate;     // L.H,L.H[:mean]: those heads ablated in the model view
  bool norm_weighted = false;   // the model view's norm-weighted attention
  bool train = false;           // open on the Train view
  long long train_until = -1;   // >= 0: a run of the default settings at once, trained to this step and paused
  std::string kv_step;          // open on the KV cache view: "P" or "P,S" (the prefill, the step shown)
  std::string walkthrough;      // open the walkthrough: STEP[+FRACTION][,mistake][,compare][,pane=q|k|v|all][,pin=FLAT][,play]
};

// Registers the gui flags and the optional SESSION positional on `sub`.
void add_options(CLI::App& sub, Options& opts);

// Runs the app; returns the process exit status (2 with one stderr line when no display).
int run(const Options& opts);

}  // namespace mhaviz::gui
