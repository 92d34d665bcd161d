#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/gpt_worker.hpp"
#include "mhaviz/hf_interventions.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/kernel_tuning.hpp"
#include "mhaviz/model_kinds.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz::cli {

namespace {

// VmHWM, the peak resident set of this process image. getrusage's ru_maxrss would also
// count a parent's peak inherited across fork + exec (a Python driver, say).
double peak_rss_mib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0.0;
  char line[256];
  double kib = 0.0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
  std::fclose(f);
  return kib / 1024.0;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Runs `step` after `warmup` untimed runs, `repeat` times (0: as many as fit in 1 s, 5 to
// 2000); returns each run's milliseconds. Each run of step (warm-up ones too) is followed by
// one of `after`, timed apart into *after_ms when given: an edit and the read of its weights
// then take turns and see the same machine. Timed one batch after the other, they did not:
// this machine's reads moved between two speeds from one second to the next (Qwen3-0.6B's
// weights in 20–23 or 33–36 ms), and the same code's edit / read-once came out 1.2 to 1.9.
template <class Step, class After>
std::vector<double> time_runs(int warmup, int repeat, Step step, After after, std::vector<double>* after_ms) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) {
    step();
    after();
  }
  std::vector<double> ms;
  const auto start = clock::now();
  for (;;) {
    auto t0 = clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    t0 = clock::now();
    after();
    if (after_ms) after_ms->push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (repeat > 0 ? static_cast<int>(ms.size()) >= repeat : (ms.size() >= 5 && (elapsed >= 1.0 || ms.size() >= 2000)))
      break;
  }
  return ms;
}

template <class Step>
std::vector<double> time_runs(int warmup, int repeat, Step step) {
  return time_runs(
      warmup, repeat, step, [] {}, nullptr);
}

// The line saying what was timed (a whole forward, or the recompute of rows [from, T) after
// an edit at P) and the runs' median, min and max.
void print_runs(const BenchOptions& o, int P, int from, int T, const std::vector<double>& ms) {
  const std::string what = o.edit_at < 0 ? "full forward (every layer's attention kept, logits at the last position)"
                                         : "recompute after an edit at position " + std::to_string(P) + " (rows " +
                                               std::to_string(from) + " to " + std::to_string(T - 1) + ")";
  std::printf("%s: %zu runs after %d warm-up, median %.4f ms, min %.4f ms, max %.4f ms\n", what.c_str(), ms.size(),
              o.warmup, median_of(ms), *std::min_element(ms.begin(), ms.end()),
              *std::max_element(ms.begin(), ms.end()));
}

// --tokens pseudo-random ids from --seed; next() changes the token at P, alternating between
// its drawn id and the one after it, so that each run recomputes rows >= P.
struct BenchIds {
  std::vector<int> ids;
  std::size_t at = 0;
  int drawn = 0, other = 0;
  bool flipped = false;
  BenchIds(const BenchOptions& o, int T, int P, int vocab) : ids(static_cast<std::size_t>(T)) {
    std::mt19937 gen(static_cast<std::mt19937::result_type>(o.seed));
    for (int& id : ids) id = static_cast<int>(gen() % static_cast<unsigned>(vocab));
    at = static_cast<std::size_t>(P);
    drawn = ids[at];
    other = (drawn + 1) % vocab;
  }
  const std::vector<int>& next() {
    flipped = !flipped;
    ids[at] = flipped ? other : drawn;
    return ids;
  }
};

// Times the runs of `step` (time_runs); with --edit-at each is followed by a read of every
// weight an edit must read (read(): `bytes` of them, as held), and the reads' median is
// printed beside the edit's. *read_once: the scripts' line's " read_once_ms=…" (empty
// without --edit-at).
template <class Step, class Read>
std::vector<double> time_edits(const BenchOptions& o, Step step, std::int64_t bytes, Read read,
                               std::string* read_once) {
  read_once->clear();
  if (o.edit_at < 0) return time_runs(o.warmup, o.repeat, step);
  std::uint64_t sink = 0;
  std::vector<double> reads;
  const std::vector<double> ms = time_runs(
      o.warmup, o.repeat, step, [&] { sink += read(); }, &reads);
  const double median = median_of(reads);
  std::printf(
      "reading every weight once (%.1f MiB as held, checksum %llu), after each run: median %.4f ms; the edit takes "
      "%.2f times that\n",
      static_cast<double>(bytes) / (1 << 20), static_cast<unsigned long long>(sink % 1000), median,
      median_of(ms) / median);
  char buf[64];
  std::snprintf(buf, sizeof buf, " read_once_ms=%.4f", median);
  *read_once = buf;
  return ms;
}

// --sweep: an ablation sweep over every head (gpt_interventions.hpp, hf_interventions.hpp) on
// ids, alternated with a fresh forward of the same ids, so both are timed under the same load.
template <class Model>
int bench_sweep(const Model& model, const std::vector<int>& ids, const BenchOptions& o) {
  const ModelFacts f = model_facts(model);
  const TokenMetric metric{ids.back(), -1};
  std::vector<double> fwd, sweep;
  using clock = std::chrono::steady_clock;
  const int runs = o.repeat > 0 ? o.repeat : 5;
  for (int i = -std::min(o.warmup, 1); i < runs; ++i) {
    const auto t0 = clock::now();
    const auto clean = model_forward(model, ids);
    const auto t1 = clock::now();
    ablation_sweep(model, clean, metric, AblationMode::Zero);
    const auto t2 = clock::now();
    if (i < 0) continue;  // warm-up
    fwd.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    sweep.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  const int heads = f.layers * f.heads;
  std::printf("mhaviz bench: model %s (%s, %d layers, %d heads, %d wide, vocab %d), T=%zu, products in %s\n",
              o.model.c_str(), f.architecture.c_str(), f.layers, f.heads, f.width, f.vocab, ids.size(),
              std::string(backend_name(backend())).c_str());
  const double s = median_of(sweep), fm = median_of(fwd);
  std::printf("ablation sweep over %d heads: %d runs, median %.1f ms (%.2f ms a head), min %.1f ms, max %.1f ms\n",
              heads, runs, s, s / heads, *std::min_element(sweep.begin(), sweep.end()),
              *std::max_element(sweep.begin(), sweep.end()));
  std::printf("full forward, alternated with it: median %.2f ms; the sweep costs %.1f forwards (%d without reuse)\n",
              fm, s / fm, heads);
  std::printf("%s\n", kernel_tuning_summary().c_str());
  std::printf("sweep_median_ms=%.1f forward_median_ms=%.2f\n", s, fm);
  return 0;
}

// A trained GPT's forward keeping every layer's attention, to the last position's logits,
// into one reused trace as the app recomputes. Each run changes the token at P (0 unless
// --edit-at), alternating between two ids, so rows >= P are really recomputed every time;
// with --edit-at, then the time to read once every weight an edit reads whole.
int bench_model(const BenchOptions& o) {
  GptModel model = load_gpt(o.model);
  const GptConfig& c = model.config;
  const int T = o.tokens, P = o.edit_at < 0 ? 0 : o.edit_at;
  if (T < 1 || T > c.n_ctx)
    return usage_error("--tokens: " + std::to_string(T) + " is out of range [1, " + std::to_string(c.n_ctx) +
                       "] (the model's context)");
  if (P >= T)
    return usage_error("--edit-at: " + std::to_string(o.edit_at) + " is out of range [0, " + std::to_string(T - 1) +
                       "]");
  prepare_gpt_forward(model);
  BenchIds ids(o, T, P, c.vocab_size);
  if (o.sweep) return bench_sweep(model, ids.ids, o);
  GptTrace trace = gpt_forward(model, ids.ids);
  std::string read_once;
  const std::vector<double> ms = time_edits(
      o, [&] { gpt_forward(model, ids.next(), trace); }, gpt_weight_bytes(model),
      [&] { return gpt_read_weights(model); }, &read_once);
  const double median = median_of(ms);
  const double flops = gpt_forward_flops(c, T, trace.recomputed_from);
  std::printf(
      "mhaviz bench: model %s (%s layout, %d layers, %d heads, %d wide, vocab %d, %lld parameters), T=%d, products in "
      "%s\n",
      o.model.c_str(), model.layout == GptLayout::HuggingFace ? "Hugging Face" : "book", c.n_layer, c.n_head, c.n_embd,
      c.vocab_size, static_cast<long long>(model.parameter_count()), T, std::string(backend_name(backend())).c_str());
  print_runs(o, P, trace.recomputed_from, T, ms);
  std::printf("%.3f GFLOP per run\n", flops / 1e9);
  std::printf("%s\n", kernel_tuning_summary().c_str());
  std::printf("median_ms=%.4f gflops=%.2f peak_rss_mib=%.1f%s\n", median, flops / (median * 1e-3) / 1e9, peak_rss_mib(),
              read_once.c_str());
  return 0;
}

// A Qwen, Llama or Gemma folder's forward over --tokens random ids (--seed), every layer's
// attention kept, to the last position's logits, into one reused trace as the app recomputes.
// With --edit-at P each run changes the token at P, alternating between two ids, so rows >= P
// are recomputed every time; then the time to read every weight the model holds once, the
// floor of an edit that needs each weight once. The load (widening, packing) is timed apart.
int bench_hf_model(const BenchOptions& o) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const HfModel model = load_hf_model(o.model);
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  const HfConfig& c = model.config;
  const int T = o.tokens, limit = c.max_position_embeddings > 0 ? c.max_position_embeddings : 1 << 20;
  if (T < 1 || T > limit)
    return usage_error("--tokens: " + std::to_string(T) + " is out of range [1, " + std::to_string(limit) +
                       "] (the model's max_position_embeddings)");
  const int P = o.edit_at < 0 ? 0 : o.edit_at;
  if (P >= T)
    return usage_error("--edit-at: " + std::to_string(o.edit_at) + " is out of range [0, " + std::to_string(T - 1) +
                       "]");
  BenchIds ids(o, T, P, c.vocab_size);
  if (o.sweep) return bench_sweep(model, ids.ids, o);
  HfTrace trace;  // reused, as the app recomputes into its trace
  hf_forward(model, ids.ids, trace);
  std::string read_once;
  const std::vector<double> ms = time_edits(
      o, [&] { hf_forward(model, ids.next(), trace); }, hf_weight_bytes(model), [&] { return hf_read_weights(model); },
      &read_once);
  const double median = median_of(ms), flops = hf_forward_flops(c, T, trace.recomputed_from);
  std::printf(
      "mhaviz bench: model %s (%s, %d layers, %d query / %d K/V heads of %d, %d wide, vocab %d, %lld parameters, "
      "%.1f MiB of weights held), T=%d, products in %s, loaded in %.0f ms\n",
      o.model.c_str(), std::string(hf_arch_name(c.arch)).c_str(), c.num_hidden_layers, c.num_attention_heads,
      c.num_key_value_heads, c.head_dim, c.hidden_size, c.vocab_size, static_cast<long long>(model.parameter_count()),
      static_cast<double>(hf_weight_bytes(model) + static_cast<std::int64_t>(model.embed.size() * sizeof(float))) /
          (1 << 20),
      T, std::string(backend_name(backend())).c_str(), load_ms);
  print_runs(o, P, trace.recomputed_from, T, ms);
  std::printf("%.3f GFLOP per run\n", flops / 1e9);
  std::printf("%s\n", kernel_tuning_summary().c_str());
  std::printf("median_ms=%.4f gflops=%.2f peak_rss_mib=%.1f%s\n", median, flops / (median * 1e-3) / 1e9, peak_rss_mib(),
              read_once.c_str());
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, BenchOptions& o) {
  auto* sub = app.add_subcommand("bench", "Time the forward pass (median of repeats after warm-up)");
  sub->add_option("--variant", o.variant, "wrapper, weight_split, fused_qkv, gqa or mla")->capture_default_str();
  sub->add_option("--tokens", o.tokens, "Sequence length T")->capture_default_str();
  sub->add_option("--d-in", o.d_in, "Embedding width d_in")->capture_default_str();
  sub->add_option("--d-out", o.d_out, "d_out")->capture_default_str();
  sub->add_option("--heads", o.heads, "num_heads")->capture_default_str();
  sub->add_option("--batch", o.batch, "Batch size b")->capture_default_str();
  sub->add_option("--repeat", o.repeat, "Timed runs (default: as many as fit in 1 s, 5 to 2000)");
  sub->add_option("--warmup", o.warmup, "Untimed runs first")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of parameters and embeddings")->capture_default_str();
  sub->add_option("--dropout", o.dropout, "Dropout probability (training mode)")->capture_default_str();
  sub->add_flag("--qkv-bias", o.qkv_bias, "Give the Q/K/V projections a bias");
  sub->add_flag("--no-causal", o.no_causal, "No causal mask (encoder attention)");
  sub->add_option("--kv-heads", o.kv_heads, "gqa: the number of K/V heads (num_kv_groups; divides --heads)");
  sub->add_option("--window", o.window, "A sliding window of W keys (split variants, causal)");
  sub->add_option("--latent-dim", o.latent_dim, "mla: the latent's width (default max(16, d_out // 8))");
  sub->add_option("--backend", o.backend,
                  "Products in: auto (the widest kernel the CPU runs), avx512 or avx2 (this project's kernel in "
                  "AVX-512 or AVX2 + FMA tiles) or openblas (Eigen on OpenBLAS)")
      ->capture_default_str();
  sub->add_option("--model", o.model,
                  "Time a trained model's forward instead (a GPT folder or its .safetensors file, or a Qwen, Llama or "
                  "Gemma 3 folder): every layer's attention kept, "
                  "to the last position's logits; --tokens T, --seed for the ids");
  sub->add_flag("--sweep", o.sweep,
                "With --model: time an ablation sweep (each head zero-ablated in turn) against a full forward");
  sub->add_option("--edit-at", o.edit_at,
                  "With --model: time the recompute after the token at P changes (rows P to T-1)");
}

int run_bench(const BenchOptions& o) {
  ModelConfig c;
  if (!parse_variant(o.variant, c.variant))
    return usage_error("--variant: '" + o.variant + "' is not one of wrapper, weight_split, fused_qkv, gqa, mla");
  if (c.variant == Variant::Gqa && o.kv_heads == 0) return usage_error("--kv-heads: needed by --variant gqa");
  c.num_kv_groups = o.kv_heads;
  c.sliding_window = o.window;
  c.latent_dim = c.variant == Variant::Mla && o.latent_dim == 0 ? default_latent_dim(o.d_out) : o.latent_dim;
  c.d_out = o.d_out;
  c.num_heads = o.heads;
  c.context_length = o.tokens;
  c.dropout = o.dropout;
  c.qkv_bias = o.qkv_bias;
  c.causal = !o.no_causal;
  c.seed = o.seed;
  if (o.repeat < 0 || o.repeat > 100000)
    return usage_error("--repeat: " + std::to_string(o.repeat) + " is out of range [0, 100000]");
  if (o.backend != "auto") {
    Backend b{};
    if (!parse_backend(o.backend, b))
      return usage_error("--backend: '" + o.backend + "' is not one of auto, avx512, avx2, openblas");
    if (!set_backend(b))
      return usage_error("--backend: '" + o.backend + "' needs a CPU with " +
                         (b == Backend::Avx512 ? "AVX-512F" : "AVX2 and FMA") + ", which this one lacks");
  }
  if (o.warmup < 0 || o.warmup > 1000)
    return usage_error("--warmup: " + std::to_string(o.warmup) + " is out of range [0, 1000]");
  if (o.sweep && o.edit_at >= 0) return usage_error("--sweep: not with --edit-at (a sweep times whole runs)");
  if (!o.model.empty()) {
    try {
      return is_hf_model_folder(o.model) ? bench_hf_model(o) : bench_model(o);
    } catch (const LoadError& e) {
      return usage_error(e.what());
    }
  }
  if (o.edit_at >= 0) return usage_error("--edit-at: needs --model");
  if (o.sweep) return usage_error("--sweep: needs --model");
  try {
    validate_model(c, o.d_in, o.tokens, o.batch);
  } catch (const SessionError& e) {
    return usage_error(e.what());
  }
  const Model model = build_model(c, o.d_in);
  // Embeddings uniform in [-1, 1) from a generator of their own, seeded from --seed.
  std::mt19937 gen(static_cast<std::mt19937::result_type>(o.seed + 1));
  Tensor input({o.batch, o.tokens, o.d_in});
  for (auto& x : input.data) x = torch_uniform(gen, -1.0f, 1.0f);

  Trace trace;
  const std::vector<double> ms = time_runs(o.warmup, o.repeat, [&] { forward(model, input, trace); });
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = median_of(ms);
  const double rss_mib = peak_rss_mib();
  const double gflops = static_cast<double>(trace.cost.flops) / (median * 1e-3) / 1e9;
  std::string options;
  if (c.variant == Variant::Gqa) options += " kv_heads=" + std::to_string(c.num_kv_groups);
  if (c.variant == Variant::Mla) options += " latent_dim=" + std::to_string(c.latent_dim);
  if (c.sliding_window > 0) options += " window=" + std::to_string(c.sliding_window);
  std::printf("mhaviz bench: %s b=%d T=%d d_in=%d d_out=%d heads=%d%s dropout=%g %s, products in %s\n",
              o.variant.c_str(), o.batch, o.tokens, o.d_in, o.d_out, o.heads, options.c_str(), o.dropout,
              c.causal ? "causal" : "no mask", std::string(backend_name(backend())).c_str());
  std::printf(
      "forward (every intermediate kept): %zu runs after %d warm-up, median %.4f ms, min %.4f ms, max %.4f ms\n",
      ms.size(), o.warmup, median, sorted.front(), sorted.back());
  std::printf("matmul calls %lld, %.3f GFLOP per forward, %lld parameters\n",
              static_cast<long long>(trace.cost.matmul_calls), static_cast<double>(trace.cost.flops) / 1e9,
              static_cast<long long>(trace.cost.parameters));
  std::printf("%s\n", kernel_tuning_summary().c_str());
  std::printf("median_ms=%.4f gflops=%.2f peak_rss_mib=%.1f\n", median, gflops, rss_mib);
  return 0;
}

}  // namespace mhaviz::cli
