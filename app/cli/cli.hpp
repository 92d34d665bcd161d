// Subcommands of the `mhaviz` executable other than the GUI.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli_model.hpp"

namespace CLI {
class App;
}

namespace mhaviz::cli {

struct DumpOptions {
  std::string session;  // or model.path
  ModelOptions model;
  std::string output;  // empty: standard output
  bool eval = false;
  std::string ablate;              // --ablate 5.1,6.9[:mean] (with --model)
  std::optional<int> decode_from;  // --decode-from P: prefill P rows, then decode one at a time through a KV cache
};
void add_dump(CLI::App& app, DumpOptions& o);
int run_dump(const DumpOptions& o);

struct BenchOptions {
  std::string variant = "weight_split";
  int tokens = 1024, d_in = 768, d_out = 768, heads = 12, batch = 1;
  int repeat = 0;  // 0: adaptive, at least 1 s of runs
  int warmup = 2;
  unsigned long long seed = 123;
  double dropout = 0.0;
  bool qkv_bias = false;
  bool no_causal = false;
  int kv_heads = 0;    // --kv-heads G: gqa's K/V heads (num_kv_groups)
  int window = 0;      // --window W: the sliding window (0: off)
  int latent_dim = 0;  // --latent-dim L: mla's latent (0: max(16, d_out // 8))
  std::string backend = "auto";
  std::string model;   // --model: time a trained GPT's forward instead
  int edit_at = -1;    // --edit-at P (with --model): time the recompute after a change at P
  bool sweep = false;  // --sweep (with --model): time an ablation sweep over every head
};
void add_bench(CLI::App& app, BenchOptions& o);
int run_bench(const BenchOptions& o);

struct ExportOptions {
  std::string session, tensor, format, output;
  std::vector<std::int64_t> select;
  int decimals = 4;
  bool eval = false;
};
void add_export(CLI::App& app, ExportOptions& o);
int run_export(const ExportOptions& o);

struct RenderOptions {
  std::string session, output, cells_json;
  std::vector<std::string> view{"grid"};  // grid | head [N] | step [K]
  int head = -1;                          // --head (also the N of --view head N)
  std::string step;                       // --step: number or name (also the K of --view step K)
  std::string pane = "all";               // --pane: q, k, v or all (the projection steps of --view step)
  std::string stage = "weights", colormap = "viridis", theme = "light";
  int scale = 2, batch = 0;
  std::string size = "1280x720";  // --size WxH: the canvas the figure fills (logical pixels)
  float font = 17.0f;             // --font PX: the title's size; the other text sizes follow it
  bool caption = true, transparent = false, log_scale = false, linear_scale = false, no_values = false,
       per_head_scale = false;
  bool mistake = false, eval = false;
  int decode_from = 1;    // --decode-from P (with --view kv-step): the prefill's rows
  ModelOptions model;     // --model: a trained GPT; --view model | layer L | head L.H
  std::string detector;   // --detector (with --view model): previous-token, first-token, duplicate-token, induction
  std::string train_log;  // --train-log: a `mhaviz train --log` file (or a Train view run's log.jsonl): its plots
  bool norm_weighted = false;  // --norm-weighted (with --view model): α·‖f(x)‖ instead of α
  // --view sweep | patch | lens (with --model): the token judged, the one it is set against,
  // the corrupted text (patch; --text is the clean one), patch per head or layer-position,
  // the ablation of the sweep (zero or mean).
  std::string target, vs, corrupt, per = "head", ablation = "zero";
  int position = -1;  // --position (--view lens with --target): the position ranked; -1: the last
};
void add_render(CLI::App& app, RenderOptions& o);
int run_render(const RenderOptions& o);

// `mhaviz kv-memory`: a preset, a session's module or a model given by its sizes; unset
// options take the preset's or session's value (or, for a model by sizes, the defaults).
struct KvMemoryOptions {
  std::string preset, session, dtype = "bf16";
  std::string plot;  // --plot FILE.png|svg: memory against context length per variant
  std::optional<long long> emb_dim, heads, kv_heads, head_dim, layers, latent_dim, window, sliding_every, context,
      batch;
};
void add_kv_memory(CLI::App& app, KvMemoryOptions& o);
int run_kv_memory(const KvMemoryOptions& o);

// `mhaviz patch`: activation patching from a clean text into a corrupted one of equally many
// tokens, one run per head or per layer × position, as a JSON grid.
struct PatchOptions {
  ModelOptions model;  // --model (the texts are --clean and --corrupt)
  std::string clean, corrupt, target, vs, per = "head", output;
};
void add_patch(CLI::App& app, PatchOptions& o);
int run_patch(const PatchOptions& o);

// `mhaviz lens`: the logit lens of every layer at every position, as JSON.
struct LensOptions {
  ModelOptions model;
  int top = 5;
  std::string target, output;  // --target: also its rank and probability at every layer and position
};
void add_lens(CLI::App& app, LensOptions& o);
int run_lens(const LensOptions& o);

// `mhaviz calibrate`: the kernel's block and tile sizes timed on this CPU, into kernels.json.
struct CalibrateOptions {
  std::string config_dir;  // --config-dir (default $XDG_CONFIG_HOME/mhaviz)
  std::string backend = "auto";
};
void add_calibrate(CLI::App& app, CalibrateOptions& o);
int run_calibrate(const CalibrateOptions& o);

// Prints "mhaviz: <message>" on stderr and returns the usage-error status 2.
int usage_error(const std::string& message);
// text to standard output (output empty or "-") or atomically to the file output. Returns 0,
// or usage_error's 2 when standard output cannot be written; a file that cannot be written
// throws SessionError.
int write_output(const std::string& output, const std::string& text);
// Writes what make() returns as write_output does; a SessionError, LoadError or
// std::invalid_argument it throws is usage_error's one line and status 2, nothing written.
int write_made_output(const std::string& output, const std::function<std::string()>& make);

}  // namespace mhaviz::cli
