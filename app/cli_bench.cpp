#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli.hpp"
#include "mhaviz/backend.hpp"
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

}  // namespace

void add_bench(CLI::App& app, BenchOptions& o) {
  auto* sub = app.add_subcommand("bench", "Time the forward pass (median of repeats after warm-up)");
  sub->add_option("--variant", o.variant, "wrapper, weight_split or fused_qkv")->capture_default_str();
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
  sub->add_option("--backend", o.backend,
                  "Products in: auto (avx512 where the CPU has AVX-512F, else openblas), avx512 (this project's "
                  "kernel) or openblas (Eigen on OpenBLAS)")
      ->capture_default_str();
}

int run_bench(const BenchOptions& o) {
  ModelConfig c;
  if (!parse_variant(o.variant, c.variant))
    return usage_error("--variant: '" + o.variant + "' is not one of wrapper, weight_split, fused_qkv");
  c.d_out = o.d_out;
  c.num_heads = o.heads;
  c.context_length = o.tokens;
  c.dropout = o.dropout;
  c.qkv_bias = o.qkv_bias;
  c.causal = !o.no_causal;
  c.seed = o.seed;
  if (o.repeat < 0 || o.repeat > 100000) return usage_error("--repeat: " + std::to_string(o.repeat) + " is out of range [0, 100000]");
  if (o.backend != "auto") {
    Backend b{};
    if (!parse_backend(o.backend, b))
      return usage_error("--backend: '" + o.backend + "' is not one of auto, avx512, openblas");
    if (!set_backend(b)) return usage_error("--backend: '" + o.backend + "' needs a CPU with AVX-512F, which this one lacks");
  }
  if (o.warmup < 0 || o.warmup > 1000) return usage_error("--warmup: " + std::to_string(o.warmup) + " is out of range [0, 1000]");
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
  for (int i = 0; i < o.warmup; ++i) forward(model, input, trace);
  std::vector<double> ms;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (;;) {
    const auto t0 = clock::now();
    forward(model, input, trace);
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (o.repeat > 0 ? static_cast<int>(ms.size()) >= o.repeat : (ms.size() >= 5 && (elapsed >= 1.0 || ms.size() >= 2000))) break;
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  const double rss_mib = peak_rss_mib();
  const double gflops = static_cast<double>(trace.cost.flops) / (median * 1e-3) / 1e9;
  std::printf("mhaviz bench: %s b=%d T=%d d_in=%d d_out=%d heads=%d dropout=%g %s, products in %s\n", o.variant.c_str(),
              o.batch, o.tokens, o.d_in, o.d_out, o.heads, o.dropout, c.causal ? "causal" : "no mask",
              std::string(backend_name(backend())).c_str());
  std::printf("forward (every intermediate kept): %zu runs after %d warm-up, median %.4f ms, min %.4f ms, max %.4f ms\n",
              ms.size(), o.warmup, median, sorted.front(), sorted.back());
  std::printf("matmul calls %lld, %.3f GFLOP per forward, %lld parameters\n", static_cast<long long>(trace.cost.matmul_calls),
              static_cast<double>(trace.cost.flops) / 1e9, static_cast<long long>(trace.cost.parameters));
  std::printf("median_ms=%.4f gflops=%.2f peak_rss_mib=%.1f\n", median, gflops, rss_mib);
  return 0;
}

}  // namespace mhaviz::cli
