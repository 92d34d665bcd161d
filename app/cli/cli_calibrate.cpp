// `mhaviz calibrate`: times the kernel's candidate block and tile sizes on this CPU, prints
// each candidate's GFLOP/s at each shape and the choice, and writes the record to
// kernels.json in the settings directory, where the app and the other commands read it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>

#include "../settings_dir.hpp"
#include "cli.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/kernel_tuning.hpp"

namespace mhaviz::cli {

void add_calibrate(CLI::App& app, CalibrateOptions& o) {
  auto* sub = app.add_subcommand(
      "calibrate", "Choose the kernel's block and tile sizes for this CPU by timing them (written to kernels.json)");
  sub->add_option("--config-dir", o.config_dir, "Settings directory (default $XDG_CONFIG_HOME/mhaviz)");
  sub->add_option("--backend", o.backend, "The kernel calibrated: auto (the widest the CPU runs), avx512 or avx2")
      ->capture_default_str();
}

int run_calibrate(const CalibrateOptions& o) {
  if (o.backend != "auto") {
    Backend b{};
    if (!parse_backend(o.backend, b) || b == Backend::OpenBlas)
      return usage_error("--backend: '" + o.backend + "' is not one of auto, avx512, avx2");
    if (!set_backend(b))
      return usage_error("--backend: '" + o.backend + "' needs a CPU with " +
                         (b == Backend::Avx512 ? "AVX-512F" : "AVX2 and FMA") + ", which this one lacks");
  } else if (backend() == Backend::OpenBlas) {
    return usage_error(
        "--backend: this CPU has neither AVX-512F nor AVX2 and FMA: its products run in OpenBLAS, "
        "which has nothing to calibrate");
  }
  const std::string path = kernel_cache_file(o.config_dir);
  set_kernel_cache(path);
  CalibrationReport r;
  try {
    r = calibrate_kernels();
  } catch (const std::runtime_error& e) {
    return usage_error(e.what());
  }
  std::printf("mhaviz calibrate: the %s kernel on %s, %d threads\n", r.isa.c_str(), r.cpu.c_str(), r.threads);
  std::printf("GFLOP/s at");
  for (const CalibrationShape& s : r.shapes) std::printf("   %dx%d·%dx%d", s.m, s.k, s.k, s.n);
  std::printf("   candidate\n");
  for (const CalibrationRow& row : r.rows) {
    std::printf("%23s", "");
    for (std::size_t i = 0; i < row.gflops.size(); ++i) std::printf("   %*.1f", i == 0 ? 14 : 15, row.gflops[i]);
    std::printf("   %s (best of %d)\n", row.candidate.c_str(), row.rounds);
  }
  if (!r.attention.empty()) std::printf("%s\n", r.attention.c_str());
  if (!r.attention_rows.empty()) std::printf("%s\n", r.attention_rows.c_str());
  std::printf("chose: %s (%.2f s); written to %s\n", r.chosen.c_str(), r.seconds, path.c_str());
  return 0;
}

}  // namespace mhaviz::cli
