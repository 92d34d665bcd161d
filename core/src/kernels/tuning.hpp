// The kernel's block and tile sizes as a record the kernels read, one per ISA, instead of
// constants tuned on one chip. Every record gives the same bits (gemm.hpp: each element is one
// FMA chain over p in order whatever the blocks and tiles); only the speed differs. A record
// starts as defaults derived from the CPU's cache sizes; once a front end has named a cache
// file (set_kernel_cache), the first product large enough to matter loads the record calibrated
// for this CPU from it, or calibrates (tuning_calibrate.cpp) and writes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mhaviz/kernel_tuning.hpp"

namespace mhaviz::detail {

enum class Isa { Avx512, Avx2 };
const char* isa_name(Isa isa);  // "avx512", "avx2"

// AVX2 tile shapes: rows × (8 · vectors) columns, all inside one 32-column panel. Each
// element is the same FMA chain whichever shape computes it. 6 × 16 keeps 12 accumulators
// and two B rows in 15 of the 16 registers; 3 × 32 keeps 12 accumulators and reads four B
// vectors per step (fewer broadcasts of A per FMA, one B vector re-read from L1). A 4 × 24
// tile does not divide the 32-column panel, so it is not a candidate.
struct TileShape {
  int rows, vectors;
};
inline constexpr TileShape kAvx2Tiles[] = {{6, 2}, {3, 4}};
inline constexpr int kAvx2TileCount = 2;
std::string tile_name(int tile);  // "6x16", "3x32"
bool parse_tile(const std::string& name, int& tile);

struct KernelTuning {
  // A rows per block (kept in L2 while B's panels stream past): as many k-wide rows as fit in
  // this many KiB, a multiple of 12 rows (every tile's rows divide it). 0: every row at once.
  int row_block_kib = 0;
  // B panel rows per depth block (kept in L1 while the block's tiles pass over them); each
  // element's partial sum is carried in c between blocks. 0: the whole depth at once.
  int depth_block = 0;
  int avx2_tile = 0;   // index into kAvx2Tiles; the AVX-512 kernel's tile is 12 × 32 always
  int attn_rows = 48;  // attention's query rows per block on the kernel, a multiple of 12
  // Attention's products (gemm.hpp's Tiles::Attention, 64 to 256 deep) in the AVX2 tiles
  // though the CPU has AVX-512: calibration sets it where they ran faster there (an AMD Zen 4
  // runs AVX-512 as two 256-bit halves, and its 12 × 32 tile took 20% longer at 64 deep).
  // Only in an AVX-512 record.
  bool attn_avx2 = false;
  bool operator==(const KernelTuning&) const = default;
};

struct CacheSizes {
  std::int64_t l1d = 0, l2 = 0;  // bytes per core
};
// sysconf(_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE), else 32 KiB and 1 MiB.
CacheSizes cache_sizes();
KernelTuning default_tuning(Isa isa, const CacheSizes& caches);

// Rows per row block for k-wide rows of A (a huge number for row_block_kib = 0).
int row_block_rows(const KernelTuning& t, int k);

// [SECTION] The process's records
Isa active_isa();                     // the kernel products run in now (backend(), the CPU)
KernelTuning active_tuning(Isa isa);  // as the kernels read it at the start of a product
void set_tuning(Isa isa, const KernelTuning& t);
// Forgets records set, loaded or calibrated: defaults again, the cache read again at first use.
void reset_tuning();
// Products of at least this many multiply-adds (m · n · k) make the record be loaded or
// calibrated: a T = 16 GPT-2-small product is past it, the lessons' 6-wide ones are far below.
inline constexpr std::int64_t kTuneAtMacs = std::int64_t{1} << 24;
// Called by a product of m · n · k multiply-adds before it reads the record: at the first one
// past kTuneAtMacs (not where loops run on one thread: loops_run_inline), loads or calibrates the active ISA's record
// when a cache file is set.
void tune_before(std::int64_t macs);

// [SECTION] The cache file (kernels.json): records keyed by CPU, ISA, threads and version
struct TuningKey {
  std::string cpu;  // CPUID's brand string
  std::string isa;
  int threads = 0;  // the forward's threads (the pool's)
  int version = 0;  // of the candidate set (tuning_calibrate.cpp)
  bool operator==(const TuningKey&) const = default;
};
TuningKey key_for(Isa isa);
struct TuningEntry {
  TuningKey key;
  KernelTuning tuning;
};
// Parses a kernels.json text; throws std::runtime_error naming what is wrong.
std::vector<TuningEntry> parse_tuning_file(const std::string& text);
std::string tuning_file_json(const std::vector<TuningEntry>& entries);

// Makes t the process's record for isa while it lives, then puts back the record before it and
// where that came from: calibration times attention's blocks on real work, which reads the
// record as the forward does. Products run elsewhere meanwhile get t's sizes: the same bits.
class TrialRecord {
 public:
  TrialRecord(Isa isa, const KernelTuning& t);
  ~TrialRecord();
  TrialRecord(const TrialRecord&) = delete;
  TrialRecord& operator=(const TrialRecord&) = delete;

 private:
  Isa isa_;
  KernelTuning before_;
  std::string source_;
};

// [SECTION] Calibration (tuning_calibrate.cpp)
// The candidate set's version: a record of another version is calibrated again (2: attention's
// tiles are timed too; 3: and its rows per block).
inline constexpr int kCalibrationVersion = 3;
// Times the candidates for isa on the forward's threads and returns the fastest, with each
// candidate's GFLOP/s in report (when not null).
KernelTuning calibrate(Isa isa, CalibrationReport* report);

}  // namespace mhaviz::detail
