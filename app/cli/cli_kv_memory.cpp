// `mhaviz kv-memory`: the KV cache's size per variant (core/include/mhaviz/kv_memory.hpp).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli.hpp"
#include "figure/kv_memory_figure.hpp"
#include "mhaviz/kv_memory.hpp"

namespace mhaviz::cli {

void add_kv_memory(CLI::App& app, KvMemoryOptions& o) {
  auto* sub = app.add_subcommand("kv-memory",
                                 "The KV cache's size for MHA, GQA, MLA and a sliding window (the book's estimators)");
  sub->add_option("--preset", o.preset, "gpt2-small, gpt2-xl, llama3.2-1b, qwen3-0.6b, gemma3-270m or deepseek-v3");
  sub->add_option("--session", o.session, "A session's module as one layer (a file, - or a lesson name)");
  sub->add_option("--emb-dim", o.emb_dim, "Embedding width d_model");
  sub->add_option("--heads", o.heads, "Query heads");
  sub->add_option("--kv-heads", o.kv_heads, "K/V heads (divides --heads; default --heads: MHA alone)");
  sub->add_option("--head-dim", o.head_dim, "A head's width (default ceil(emb-dim / heads), as the book's estimators)");
  sub->add_option("--layers", o.layers, "Layers");
  sub->add_option("--latent-dim", o.latent_dim, "MLA: values cached per token and layer (adds the MLA row)");
  sub->add_option("--window", o.window, "A sliding window of W tokens (adds the SWA rows)");
  sub->add_option("--sliding-every", o.sliding_every,
                  "Of every K layers, K - 1 slide and one attends to all (default: all slide)");
  sub->add_option("--context", o.context,
                  "Tokens in the cache (default: the preset's or session's context, else 1024)");
  sub->add_option("--batch", o.batch, "Sequences (default 1)");
  sub->add_option("--dtype", o.dtype, "bf16, fp16 or fp32")->capture_default_str();
  sub->add_option("--plot", o.plot,
                  "Also draw the cache's size against the context length, one line per variant, as FILE.png or "
                  "FILE.svg (written atomically)");
}

namespace {

// The model to count: the preset's or session's, or one given by its sizes alone.
KvModel base_model(const KvMemoryOptions& o) {
  if (!o.preset.empty() && !o.session.empty()) throw SessionError("--preset: give --preset or --session, not both");
  if (!o.preset.empty()) {
    for (const KvModel& m : kv_presets())
      if (m.name == o.preset) return m;
    std::string names;
    for (const KvModel& m : kv_presets()) names += (names.empty() ? "" : ", ") + m.name;
    throw SessionError("--preset: '" + o.preset + "' is not one of " + names);
  }
  if (!o.session.empty()) return kv_model_of(load_session(o.session));
  for (const auto& [name, value] : {std::pair{"--emb-dim", o.emb_dim}, {"--heads", o.heads}, {"--layers", o.layers}})
    if (!value) throw SessionError(std::string(name) + ": missing (give it, or --preset or --session)");
  KvModel m;
  m.name = "custom";
  m.context = 1024;
  return m;
}

// An option as an int, refused whole when it does not fit one.
int narrow(const char* option, long long v) {
  if (v < -(1LL << 31) || v >= (1LL << 31))
    throw SessionError(std::string(option) + ": " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

}  // namespace

int run_kv_memory(const KvMemoryOptions& o) {
  try {
    KvModel m = base_model(o);
    if (o.emb_dim) m.emb_dim = narrow("--emb-dim", *o.emb_dim);
    if (o.heads) m.heads = narrow("--heads", *o.heads);
    // Sizes given anew: K/V heads and head_dim follow them unless given too.
    if (o.heads || o.emb_dim) {
      if (m.heads < 1) throw SessionError("--heads: " + std::to_string(m.heads) + " is out of range [1, 65536]");
      m.kv_heads = m.heads;
      m.head_dim = (m.emb_dim + m.heads - 1) / m.heads;
    }
    if (o.kv_heads) m.kv_heads = narrow("--kv-heads", *o.kv_heads);
    if (o.head_dim) m.head_dim = narrow("--head-dim", *o.head_dim);
    if (o.layers) m.layers = narrow("--layers", *o.layers);
    if (o.latent_dim) m.latent_dim = narrow("--latent-dim", *o.latent_dim);
    if (o.window) m.window = narrow("--window", *o.window);
    if (o.sliding_every) m.sliding_every = narrow("--sliding-every", *o.sliding_every);
    if (o.context) m.context = *o.context;
    if (o.batch) m.batch = narrow("--batch", *o.batch);
    m.dtype = o.dtype;
    m.dtype_bytes = kv_dtype_bytes(o.dtype);
    if (m.dtype_bytes == 0) throw SessionError("--dtype: '" + o.dtype + "' is not one of bf16, fp16, fp32");
    validate_kv_model(m);
    const bool svg = o.plot.ends_with(".svg");
    if (!o.plot.empty() && !svg && !o.plot.ends_with(".png"))
      throw SessionError("--plot: '" + o.plot + "' does not end in .png or .svg");
    if (!o.plot.empty()) {
      const figure::Figure f = figure::build_kv_memory_figure(m, figure::Options{});
      write_file_atomic(
          o.plot, svg ? figure::to_svg(f) : figure::encode_png(figure::rasterize(f, 2), f.width * 2, f.height * 2));
    }
    std::fputs(kv_memory_text(m).c_str(), stdout);
  } catch (const SessionError& e) {
    return usage_error(e.what());
  } catch (const LoadError& e) {
    return usage_error(e.what());
  }
  return 0;
}

}  // namespace mhaviz::cli
