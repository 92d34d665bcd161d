// The kernels' size records (tuning.hpp): defaults from the cache sizes, the process's records,
// kernels.json, and loading or calibrating at first use.
//
// [SECTION] Names and defaults
// [SECTION] The process's records
// [SECTION] kernels.json
// [SECTION] First use
#include "kernels/tuning.hpp"

#include <cpuid.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"
#include "mhaviz/backend.hpp"

namespace mhaviz::detail {

// [SECTION] Names and defaults

const char* isa_name(Isa isa) { return isa == Isa::Avx512 ? "avx512" : "avx2"; }

std::string tile_name(int tile) {
  const TileShape s = kAvx2Tiles[tile];
  return std::to_string(s.rows) + "x" + std::to_string(8 * s.vectors);
}

bool parse_tile(const std::string& name, int& tile) {
  for (int i = 0; i < kAvx2TileCount; ++i)
    if (name == tile_name(i)) {
      tile = i;
      return true;
    }
  return false;
}

CacheSizes cache_sizes() {
  // sysconf answers 0 or -1 where the C library cannot tell (some virtual machines, musl).
  const long l1 = ::sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  return {l1 > 0 ? l1 : 32 * 1024, l2 > 0 ? l2 : 1024 * 1024};
}

KernelTuning default_tuning(Isa, const CacheSizes& caches) {
  KernelTuning t;
  // Half the L2 for A's block: the B panel streaming past and c's rows take the rest.
  t.row_block_kib = static_cast<int>(std::max<std::int64_t>(64, caches.l2 / 2 / 1024));
  t.depth_block = 0;
  t.avx2_tile = 0;
  // A block's scores and weights (2 · rows · 1024 floats at T = 1024) in a fifth of the L2:
  // 48 rows in 2 MiB, where 48 was measured against 64 (README "Performance"); 24 at least.
  t.attn_rows = static_cast<int>(std::clamp<std::int64_t>(caches.l2 / 5 / (2 * 1024 * 4) / 24 * 24, 24, 96));
  return t;
}

int row_block_rows(const KernelTuning& t, int k) {
  if (t.row_block_kib <= 0) return INT_MAX / 2;
  const std::int64_t rows = static_cast<std::int64_t>(t.row_block_kib) * 1024 / (4 * std::max(1, k));
  return static_cast<int>(std::clamp<std::int64_t>(rows / 12 * 12, 12, INT_MAX / 2));
}

// [SECTION] The process's records

namespace {

struct State {
  std::mutex mu;  // guards the fields below
  std::string path;
  KernelTuning records[2];
  std::string sources[2];
  bool made = false;
  // Per ISA: 0 not yet loaded or calibrated, 1 under way, 2 done.
  std::atomic<int> phase[2] = {0, 0};
};

State& state() {
  static State* s = new State;  // never destroyed: a product may run while the process exits
  return *s;
}

int index_of(Isa isa) { return isa == Isa::Avx512 ? 0 : 1; }

// Defaults on first use; s.mu held.
void make_defaults(State& s) {
  if (s.made) return;
  const CacheSizes c = cache_sizes();
  for (Isa isa : {Isa::Avx512, Isa::Avx2}) {
    s.records[index_of(isa)] = default_tuning(isa, c);
    s.sources[index_of(isa)] = "defaults from the cache sizes (L1d " + std::to_string(c.l1d / 1024) + " KiB, L2 " +
                               std::to_string(c.l2 / 1024) + " KiB)";
  }
  s.made = true;
}

void publish(Isa isa, const KernelTuning& t, const std::string& source) {
  State& s = state();
  std::lock_guard lk(s.mu);
  make_defaults(s);
  s.records[index_of(isa)] = t;
  s.sources[index_of(isa)] = source;
}

std::string describe(Isa isa, const KernelTuning& t) {
  std::string out = isa == Isa::Avx2 ? "tile " + tile_name(t.avx2_tile) + ", " : "tile 12x32, ";
  out += "row block " + (t.row_block_kib > 0 ? std::to_string(t.row_block_kib) + " KiB" : std::string("none"));
  out += ", depth block " + (t.depth_block > 0 ? std::to_string(t.depth_block) : std::string("none"));
  out += ", attention " + std::to_string(t.attn_rows) + " rows";
  return out + (isa == Isa::Avx512 && t.attn_avx2 ? " in AVX2 tiles" : "");
}

}  // namespace

Isa active_isa() { return avx512_available() && backend() != Backend::Avx2 ? Isa::Avx512 : Isa::Avx2; }

KernelTuning active_tuning(Isa isa) {
  State& s = state();
  std::lock_guard lk(s.mu);
  make_defaults(s);
  return s.records[index_of(isa)];
}

void set_tuning(Isa isa, const KernelTuning& t) { publish(isa, t, "set by the caller"); }

TrialRecord::TrialRecord(Isa isa, const KernelTuning& t) : isa_(isa) {
  State& s = state();
  {
    std::lock_guard lk(s.mu);
    make_defaults(s);
    before_ = s.records[index_of(isa)];
    source_ = s.sources[index_of(isa)];
  }
  publish(isa, t, "on trial (calibration)");
}

TrialRecord::~TrialRecord() { publish(isa_, before_, source_); }

void reset_tuning() {
  State& s = state();
  std::lock_guard lk(s.mu);
  s.made = false;
  make_defaults(s);
  for (auto& p : s.phase) p.store(0);
}

// [SECTION] kernels.json

TuningKey key_for(Isa isa) {
  TuningKey k;
  unsigned regs[12] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf)
    if (!__get_cpuid(0x80000002u + leaf, &regs[leaf * 4], &regs[leaf * 4 + 1], &regs[leaf * 4 + 2],
                     &regs[leaf * 4 + 3]))
      break;
  std::string brand(reinterpret_cast<const char*>(regs), sizeof regs);
  brand = brand.substr(0, brand.find('\0'));
  const auto first = brand.find_first_not_of(' '), last = brand.find_last_not_of(' ');
  k.cpu = first == std::string::npos ? "unknown CPU" : brand.substr(first, last - first + 1);
  k.isa = isa_name(isa);
  k.threads = parallel_threads();
  k.version = kCalibrationVersion;
  return k;
}

namespace {

int int_field(const nlohmann::json& r, const char* name, int lo, int hi) {
  if (!r.contains(name) || !r[name].is_number_integer())
    throw std::runtime_error(std::string(name) + ": missing or not an integer");
  const long long v = r[name].get<long long>();
  if (v < lo || v > hi)
    throw std::runtime_error(std::string(name) + ": " + std::to_string(v) + " is out of range [" + std::to_string(lo) +
                             ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

std::string string_field(const nlohmann::json& r, const char* name) {
  if (!r.contains(name) || !r[name].is_string())
    throw std::runtime_error(std::string(name) + ": missing or not a string");
  return r[name].get<std::string>();
}

}  // namespace

std::vector<TuningEntry> parse_tuning_file(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error("not JSON");
  if (!j.is_object() || !j.contains("kernels") || !j["kernels"].is_array())
    throw std::runtime_error("kernels: missing or not a list");
  std::vector<TuningEntry> out;
  for (const auto& r : j["kernels"]) {
    if (!r.is_object()) throw std::runtime_error("kernels: an entry is not an object");
    TuningEntry e;
    e.key.cpu = string_field(r, "cpu");
    e.key.isa = string_field(r, "isa");
    if (e.key.isa != "avx512" && e.key.isa != "avx2") throw std::runtime_error("isa: '" + e.key.isa + "' is unknown");
    e.key.threads = int_field(r, "threads", 1, 1024);
    e.key.version = int_field(r, "version", 0, INT_MAX);
    e.tuning.row_block_kib = int_field(r, "row_block_kib", 0, 1 << 20);
    e.tuning.depth_block = int_field(r, "depth_block", 0, 1 << 16);
    e.tuning.attn_rows = int_field(r, "attention_rows", 12, 480);
    if (e.tuning.attn_rows % 12 != 0)
      throw std::runtime_error("attention_rows: " + std::to_string(e.tuning.attn_rows) + " is not a multiple of 12");
    const std::string tile = string_field(r, "tile");
    if (e.key.isa == "avx2" ? !parse_tile(tile, e.tuning.avx2_tile) : tile != "12x32")
      throw std::runtime_error("tile: '" + tile + "' is not a " + e.key.isa + " tile");
    const std::string attention = string_field(r, "attention_tiles");
    if (attention != "avx2" && (attention != "avx512" || e.key.isa == "avx2"))
      throw std::runtime_error("attention_tiles: '" + attention + "' is not " +
                               (e.key.isa == "avx2" ? "avx2" : "avx512 or avx2"));
    e.tuning.attn_avx2 = e.key.isa == "avx512" && attention == "avx2";
    out.push_back(e);
  }
  return out;
}

std::string tuning_file_json(const std::vector<TuningEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const TuningEntry& e : entries)
    list.push_back({{"cpu", e.key.cpu},
                    {"isa", e.key.isa},
                    {"threads", e.key.threads},
                    {"version", e.key.version},
                    {"tile", e.key.isa == "avx2" ? tile_name(e.tuning.avx2_tile) : std::string("12x32")},
                    {"row_block_kib", e.tuning.row_block_kib},
                    {"depth_block", e.tuning.depth_block},
                    {"attention_rows", e.tuning.attn_rows},
                    {"attention_tiles", e.key.isa == "avx2" || e.tuning.attn_avx2 ? "avx2" : "avx512"}});
  return nlohmann::json{{"kernels", list}}.dump(2) + "\n";
}

// [SECTION] First use

namespace {

// The kernels know no session: their cache is read and written here, whole or not at all (a
// temporary file beside it, then a rename), as the session layer's write_file_atomic does.
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  return text.str();
}

void write_text_atomic(const std::string& path, const std::string& text) {
  static std::atomic<int> serial{0};
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error("cannot write '" + path + "': " + why);
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error("cannot write '" + path + "': " + ec.message());
  }
}

// The file's entries and, when it holds none for key, why (missing, corrupt, stale).
std::vector<TuningEntry> read_entries(const std::string& path, const TuningKey& key, std::string& why) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    why = "it was missing";
    return {};
  }
  std::vector<TuningEntry> entries;
  try {
    entries = parse_tuning_file(read_text(path));
  } catch (const std::exception& e) {
    why = std::string("it was corrupt: ") + e.what();
    return {};
  }
  why = "it held no record for " + key.cpu + ", " + key.isa + ", " + std::to_string(key.threads) +
        " threads, version " + std::to_string(key.version);
  return entries;
}

// entries with key's record replaced by t, records of other versions dropped, written to path.
void write_entries(const std::string& path, std::vector<TuningEntry> entries, const TuningKey& key,
                   const KernelTuning& t) {
  std::erase_if(entries, [&](const TuningEntry& e) { return e.key == key || e.key.version != key.version; });
  entries.push_back({key, t});
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  write_text_atomic(path, tuning_file_json(entries));
}

// Loads isa's record from path, or calibrates it and rewrites path. Never throws: a cache
// that cannot be read or written costs a calibration, not the caller's product.
void load_or_calibrate(Isa isa, const std::string& path) {
  const TuningKey key = key_for(isa);
  std::string why;
  std::vector<TuningEntry> entries = read_entries(path, key, why);
  for (const TuningEntry& e : entries)
    if (e.key == key) {
      publish(isa, e.tuning, "loaded from " + path);
      return;
    }
  CalibrationReport report;
  const KernelTuning t = calibrate(isa, &report);
  std::string written = "written to " + path;
  try {
    write_entries(path, std::move(entries), key, t);
  } catch (const std::exception& e) {
    written = std::string("not written (") + e.what() + ")";
  }
  publish(isa, t, "calibrated now, " + written);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", report.seconds);
  std::cerr << "mhaviz: calibrated the " << key.isa << " kernel's sizes in " << seconds << " s because " << path << " "
            << why.substr(3) << ": " << describe(isa, t) << "; " << written << "\n";
}

}  // namespace

void tune_before(std::int64_t macs) {
  if (macs < kTuneAtMacs) return;
  const Isa isa = active_isa();
  State& s = state();
  std::atomic<int>& phase = s.phase[index_of(isa)];
  if (phase.load(std::memory_order_acquire) != 0 || loops_run_inline()) return;
  std::string path;
  {
    std::lock_guard lk(s.mu);
    path = s.path;
  }
  if (path.empty()) return;
  int expected = 0;
  if (!phase.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;  // another thread does it
  load_or_calibrate(isa, path);
  phase.store(2, std::memory_order_release);
}

}  // namespace mhaviz::detail

namespace mhaviz {

void set_kernel_cache(const std::string& path) {
  detail::State& s = detail::state();
  std::lock_guard lk(s.mu);
  if (s.path == path) return;
  s.path = path;
  for (auto& p : s.phase) p.store(0);
}

std::string kernel_cache() {
  detail::State& s = detail::state();
  std::lock_guard lk(s.mu);
  return s.path;
}

CalibrationReport calibrate_kernels() {
  const detail::Isa isa = detail::active_isa();
  detail::State& s = detail::state();
  std::atomic<int>& phase = s.phase[detail::index_of(isa)];
  phase.store(1);  // no product loads the file meanwhile
  CalibrationReport report;
  const detail::KernelTuning t = detail::calibrate(isa, &report);
  report.chosen = detail::describe(isa, t);
  const std::string path = kernel_cache();
  detail::publish(isa, t, path.empty() ? "calibrated now" : "calibrated now, written to " + path);
  phase.store(2);
  if (!path.empty()) {
    std::string why;
    const detail::TuningKey key = detail::key_for(isa);
    detail::write_entries(path, detail::read_entries(path, key, why), key, t);
  }
  return report;
}

void tune_kernels_for(std::int64_t multiply_adds) {
  if (backend() != Backend::OpenBlas && detail::kernel_available()) detail::tune_before(multiply_adds);
}

std::string kernel_tuning_summary() {
  if (backend() == Backend::OpenBlas || !detail::kernel_available())
    return "kernel sizes: none used (products in openblas)";
  const detail::Isa isa = detail::active_isa();
  detail::State& s = detail::state();
  std::lock_guard lk(s.mu);
  detail::make_defaults(s);
  const int i = detail::index_of(isa);
  return std::string("kernel sizes (") + detail::isa_name(isa) + "): " + detail::describe(isa, s.records[i]) + "; " +
         s.sources[i];
}

}  // namespace mhaviz
