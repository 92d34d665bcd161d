// Block and tile sizes of the project's kernel, calibrated on this CPU. The core never finds
// the settings directory itself: a front end names the cache file (the app, `bench`, `dump`,
// `render`: kernels.json in the settings directory); with none, the kernels use defaults
// derived from the CPU's cache sizes. Every record gives the same bits; only speed differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mhaviz {

// The file calibrated records are read from and written to. At the first product large enough
// to matter, the record for this CPU, ISA and thread count is loaded from it, or calibrated
// (well under a second) and written with one line on stderr when the file is missing, corrupt
// or holds no such record. Empty: no cache (the defaults).
void set_kernel_cache(const std::string& path);
std::string kernel_cache();

// Loads or calibrates the record now if a product of `multiply_adds` would (from 2^24 on, a
// cache file set and the kernel in use; otherwise nothing): a front end that times a run calls
// it first with the run's largest product, so a first-use calibration is not counted as the
// run's time.
void tune_kernels_for(std::int64_t multiply_adds);

struct CalibrationShape {
  int m = 0, n = 0, k = 0;
};
struct CalibrationRow {
  std::string candidate;       // e.g. "tile 6x16, row block 1024 KiB, depth block 256"
  std::vector<double> gflops;  // one per shape: the best of `rounds` runs
  int rounds = 0;              // up to 5; fewer where the products are slow (calibration's time budget)
};
struct CalibrationReport {
  std::string cpu, isa;
  int threads = 0;
  std::vector<CalibrationShape> shapes;
  std::vector<CalibrationRow> rows;  // in the order timed; row 0 is the defaults
  std::string chosen;                // the chosen record, as `bench` describes it (set by calibrate_kernels)
  // On a CPU with AVX-512 and AVX2: attention's short product timed in both kernels' tiles and
  // which one its products will run in (one line); empty otherwise.
  std::string attention;
  // Attention's query rows per block: each candidate's time on a whole attention, and the
  // choice (one line).
  std::string attention_rows;
  double seconds = 0.0;  // the whole calibration
};

// Calibrates the kernel products run in now (AVX-512, or AVX2 where the CPU or backend()
// says so), makes it this process's record and writes it to the cache file when one is set.
// Throws std::runtime_error ("cannot write '<file>': <reason>") when the file cannot be written.
// Needs a CPU with AVX2 and FMA at least.
CalibrationReport calibrate_kernels();

// One line: the record the active kernel uses and where it came from (defaults, loaded from
// the cache file, calibrated now), e.g. for `mhaviz bench`.
std::string kernel_tuning_summary();

}  // namespace mhaviz
