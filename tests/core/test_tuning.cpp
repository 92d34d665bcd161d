// The kernels' size records (kernels/tuning.hpp): every candidate the calibration may choose
// gives the bits of the defaults, on both kernels, at shapes around every tile's edge, every
// depth block's edge and every row block's edge; kernels.json round-trips and refuses what it
// cannot hold; a product past kTuneAtMacs loads the record the cache file holds for this CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>

#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/tuning.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/kernel_tuning.hpp"
#include "mhaviz/session.hpp"
#include "test_util.hpp"

namespace mhaviz {
namespace {

using detail::Isa;
using detail::KernelTuning;

using test::random_values;

// Every product of one shape under one record: packed with a bias, row-major, row-major
// lower-triangular (a's upper triangle NaN past the 12-row tile a row falls in: every tile
// height divides 12 and every row block, so no tile may read it).
struct Products {
  std::vector<float> packed, rowmajor, lower;
};

struct Shape {
  int m, n, k;
  std::vector<float> a, w, wt, bias, a_lower;
};

Shape make_shape(int m, int n, int k, std::mt19937& gen) {
  Shape s{m,
          n,
          k,
          random_values(static_cast<std::size_t>(m) * k, gen),
          random_values(static_cast<std::size_t>(n) * k, gen),
          {},
          random_values(static_cast<std::size_t>(n), gen),
          {}};
  s.wt.resize(static_cast<std::size_t>(k) * n);
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p) s.wt[static_cast<std::size_t>(p) * n + j] = s.w[static_cast<std::size_t>(j) * k + p];
  s.a_lower = s.a;
  for (int i = 0; i < m; ++i)
    for (int p = i + 1; p < k; ++p) s.a_lower[static_cast<std::size_t>(i) * k + p] = p >= (i / 12 + 1) * 12 ? NAN : 0;
  return s;
}

Products run(const Shape& s, detail::Tiles tiles = detail::Tiles::Widest) {
  Products out;
  const std::vector<float> packed = detail::pack_transposed(s.w.data(), s.n, s.k);
  const std::size_t size = static_cast<std::size_t>(s.m) * s.n;
  out.packed.assign(size, 7.0f);
  out.rowmajor.assign(size, 7.0f);
  out.lower.assign(size, 7.0f);
  detail::gemm_packed(s.m, s.n, s.k, s.a.data(), s.k, packed.data(), s.bias.data(), out.packed.data(), s.n, tiles);
  detail::gemm_rowmajor(s.m, s.n, s.k, s.a.data(), s.k, s.wt.data(), s.n, out.rowmajor.data(), s.n, false, tiles);
  if (s.k >= s.m)
    detail::gemm_rowmajor(s.m, s.n, s.k, s.a_lower.data(), s.k, s.wt.data(), s.n, out.lower.data(), s.n, true, tiles);
  return out;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// Every candidate record: both AVX2 tile shapes; no depth blocks, blocks of 1, 5 and 16 rows
// of B (so k = 15 ... 33 ends inside, at and past a block) and the calibration's 128;
// no row blocks and blocks of 12 rows (1 KiB of k ≤ 21 floats a row) and 24 rows.
std::vector<KernelTuning> candidates() {
  std::vector<KernelTuning> out;
  for (int tile = 0; tile < detail::kAvx2TileCount; ++tile)
    for (const int depth : {0, 1, 5, 16, 128})
      for (const int kib : {0, 1, 2}) out.push_back({kib, depth, tile, 48});
  return out;
}

class Tuning : public test::OnBackend {
 protected:
  void TearDown() override {
    detail::reset_tuning();
    test::OnBackend::TearDown();
  }
};

TEST_P(Tuning, EveryCandidateGivesTheDefaultsBitsAtEveryEdge) {
  const Isa isa = detail::active_isa();
  std::mt19937 gen(31);
  std::vector<Shape> shapes;
  for (const int m : {1, 2, 3, 5, 6, 7, 11, 12, 13, 23, 24, 25, 37})
    for (const int n : {1, 8, 9, 16, 17, 31, 32, 33, 65})
      for (const int k : {1, 15, 16, 17, 33}) shapes.push_back(make_shape(m, n, k, gen));
  detail::reset_tuning();
  std::vector<Products> want;
  for (const Shape& s : shapes) want.push_back(run(s));
  int compared = 0;
  for (const KernelTuning& t : candidates()) {
    detail::set_tuning(isa, t);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Shape& s = shapes[i];
      const Products got = run(s);
      const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                               " under tile " + detail::tile_name(t.avx2_tile) + ", depth block " +
                               std::to_string(t.depth_block) + ", row block " + std::to_string(t.row_block_kib) +
                               " KiB";
      ASSERT_TRUE(same_bits(got.packed, want[i].packed)) << "packed " << what;
      ASSERT_TRUE(same_bits(got.rowmajor, want[i].rowmajor)) << "row-major " << what;
      ASSERT_TRUE(same_bits(got.lower, want[i].lower)) << "lower-triangular " << what;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 30 * 13 * 9 * 5);
  // And the defaults against a loop in double (test_gemm.cpp holds them to it at more shapes).
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (int r = 0; r < s.m; ++r)
      for (int j = 0; j < s.n; ++j) {
        double sum = s.bias[static_cast<std::size_t>(j)], lower = 0;
        for (int p = 0; p < s.k; ++p) {
          const double b = s.w[static_cast<std::size_t>(j) * s.k + p];
          sum += static_cast<double>(s.a[static_cast<std::size_t>(r) * s.k + p]) * b;
          if (p <= r) lower += static_cast<double>(s.a_lower[static_cast<std::size_t>(r) * s.k + p]) * b;
        }
        const std::size_t e = static_cast<std::size_t>(r) * s.n + j;
        ASSERT_NEAR(want[i].packed[e], sum, 1e-5 * (1 + std::sqrt(s.k))) << s.m << "x" << s.n << "x" << s.k;
        if (s.k >= s.m) {
          ASSERT_NEAR(want[i].lower[e], lower, 1e-5 * (1 + std::sqrt(s.k))) << s.m << "x" << s.n;
        }
      }
  }
}

// Row blocks of 12 rows at k = 768 (36 KiB) against none, on a product as large as the
// forward's: many blocks, the row block's edge inside a tile's height for 3 × 32 too.
TEST_P(Tuning, RowAndDepthBlocksAtTheForwardsSizeGiveTheSameBits) {
  const Isa isa = detail::active_isa();
  std::mt19937 gen(37);
  const Shape s = make_shape(130, 96, 768, gen);
  detail::reset_tuning();
  const Products want = run(s);
  for (const KernelTuning& t : {KernelTuning{36, 0, 0, 48}, KernelTuning{36, 128, 1, 48}, KernelTuning{0, 256, 1, 48},
                                KernelTuning{100, 100, 0, 48}}) {
    detail::set_tuning(isa, t);
    const Products got = run(s);
    EXPECT_TRUE(same_bits(got.packed, want.packed)) << t.row_block_kib << " KiB, depth " << t.depth_block;
    EXPECT_TRUE(same_bits(got.lower, want.lower)) << t.row_block_kib << " KiB, depth " << t.depth_block;
  }
}

// Attention's products in the AVX2 tiles (a record's attn_avx2, on a CPU with AVX-512) give
// the bits of the widest tiles: at a block of attention's shape (24 query rows, 64 deep,
// keys past a panel's edge) and around the tiles' edges; a product of Tiles::Widest ignores
// the flag.
TEST_P(Tuning, AttentionsTilesGiveTheWidestTilesBits) {
  const Isa isa = detail::active_isa();
  std::mt19937 gen(41);
  for (const auto& [m, n, k] : {std::tuple{24, 1000, 64}, std::tuple{13, 45, 64}, std::tuple{30, 64, 40}}) {
    const Shape s = make_shape(m, n, k, gen);
    detail::reset_tuning();
    const Products want = run(s);
    for (const bool narrow : {false, true}) {
      KernelTuning t = detail::active_tuning(isa);
      t.attn_avx2 = narrow;
      detail::set_tuning(isa, t);
      for (const detail::Tiles tiles : {detail::Tiles::Attention, detail::Tiles::Widest}) {
        const Products got = run(s, tiles);
        EXPECT_TRUE(same_bits(got.packed, want.packed)) << m << "x" << n << "x" << k << " narrow " << narrow;
        EXPECT_TRUE(same_bits(got.rowmajor, want.rowmajor)) << m << "x" << n << "x" << k << " narrow " << narrow;
        EXPECT_TRUE(same_bits(got.lower, want.lower)) << m << "x" << n << "x" << k << " narrow " << narrow;
      }
    }
  }
}

// Attention's rows per block (what calibration now chooses among 24, 48 and 96) change how the
// work is cut, not the bits: a causal attention with raw scores kept, T past a block's edge and
// across several blocks, under each candidate (and 12, the least any tile allows).
TEST_P(Tuning, AttentionsRowsPerBlockGiveTheSameBits) {
  const Isa isa = detail::active_isa();
  constexpr int kHeads = 3, kT = 203, kHd = 64;
  std::mt19937 gen(43);
  const std::size_t n = static_cast<std::size_t>(kHeads) * kT * kHd;
  const std::vector<float> q = random_values(n, gen), k = random_values(n, gen), v = random_values(n, gen);
  struct Out {
    std::vector<float> weights, raw, context;
  };
  const auto attend = [&](int rows) {
    KernelTuning t = detail::default_tuning(isa, detail::cache_sizes());
    t.attn_rows = rows;
    const detail::TrialRecord trial(isa, t);
    Out o{std::vector<float>(static_cast<std::size_t>(kHeads) * kT * kT, 7.0f), {}, std::vector<float>(n, 7.0f)};
    o.raw = o.weights;
    detail::AttentionJob j = detail::per_head_job(1, kHeads, kT, kHd, 0, q.data(), k.data(), v.data(), o.weights.data(),
                                                  o.context.data(), true);
    j.mask.causal = true;
    j.raw_scores = o.raw.data();
    std::vector<float> workspace;
    detail::attention(j, workspace);
    return o;
  };
  const Out want = attend(48);
  for (const int rows : {12, 24, 96}) {
    const Out got = attend(rows);
    EXPECT_TRUE(same_bits(got.weights, want.weights)) << rows << " rows";
    EXPECT_TRUE(same_bits(got.raw, want.raw)) << rows << " rows";
    EXPECT_TRUE(same_bits(got.context, want.context)) << rows << " rows";
  }
}

// A record on trial (calibration timing attention) is the process's while it lives; after it,
// the record before and where it came from are back.
TEST_P(Tuning, ARecordOnTrialIsPutBack) {
  const Isa isa = detail::active_isa();
  KernelTuning mine = detail::active_tuning(isa);
  mine.attn_rows = 36;
  detail::set_tuning(isa, mine);
  const std::string summary = kernel_tuning_summary();
  {
    KernelTuning t = mine;
    t.attn_rows = 96;
    const detail::TrialRecord trial(isa, t);
    EXPECT_EQ(detail::active_tuning(isa).attn_rows, 96);
  }
  EXPECT_EQ(detail::active_tuning(isa), mine);
  EXPECT_EQ(kernel_tuning_summary(), summary);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Tuning, ::testing::Values(Backend::Avx512, Backend::Avx2), test::backend_label);

TEST(TuningDefaults, FollowTheCacheSizes) {
  // Zen 3's 512 KiB L2: half of it for A, 85 rows of 768 floats -> 84; attention 24 rows.
  const KernelTuning zen3 = detail::default_tuning(Isa::Avx2, {32 * 1024, 512 * 1024});
  EXPECT_EQ(zen3.row_block_kib, 256);
  EXPECT_EQ(detail::row_block_rows(zen3, 768), 84);
  EXPECT_EQ(zen3.attn_rows, 24);
  EXPECT_EQ(zen3.depth_block, 0);
  // A 2 MiB L2: 336 rows of 768, 84 of 3072; attention 48 rows.
  const KernelTuning big = detail::default_tuning(Isa::Avx512, {48 * 1024, 2048 * 1024});
  EXPECT_EQ(detail::row_block_rows(big, 768), 336);
  EXPECT_EQ(detail::row_block_rows(big, 3072), 84);
  EXPECT_EQ(big.attn_rows, 48);
  const detail::CacheSizes here = detail::cache_sizes();
  EXPECT_GT(here.l1d, 0);
  EXPECT_GT(here.l2, 0);
}

TEST(TuningFile, RoundTripsAndRefusesWhatItCannotHold) {
  const std::vector<detail::TuningEntry> entries = {
      {{"AMD EPYC 7B13", "avx2", 2, detail::kCalibrationVersion}, {256, 128, 1, 24}},
      {{"Intel(R) Xeon(R) Processor", "avx512", 2, detail::kCalibrationVersion}, {1024, 0, 0, 48}},
      {{"AMD EPYC", "avx512", 2, detail::kCalibrationVersion}, {512, 0, 0, 24, true}}};
  const std::string text = detail::tuning_file_json(entries);
  const std::vector<detail::TuningEntry> back = detail::parse_tuning_file(text);
  ASSERT_EQ(back.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].key, entries[i].key);
    EXPECT_EQ(back[i].tuning, entries[i].tuning);
  }
  const auto refused = [](const std::string& t) {
    try {
      detail::parse_tuning_file(t);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // The file with one occurrence of `from` (the first, or the last) replaced by `to`.
  const auto with = [&text](const std::string& from, const std::string& to, bool last = false) {
    std::string t = text;
    return t.replace(last ? t.rfind(from) : t.find(from), from.size(), to);
  };
  EXPECT_EQ(refused(text.substr(0, text.size() / 2)), "not JSON");  // truncated
  EXPECT_EQ(refused("{}"), "kernels: missing or not a list");
  EXPECT_EQ(refused(with("\"3x32\"", "\"4x24\"")), "tile: '4x24' is not a avx2 tile");
  EXPECT_EQ(refused(with("\"attention_rows\": 24", "\"attention_rows\": 25")),
            "attention_rows: 25 is not a multiple of 12");
  EXPECT_EQ(refused(with("\"row_block_kib\": 256", "\"row_block_kib\": -1")),
            "row_block_kib: -1 is out of range [0, 1048576]");
  // Attention's tiles: AVX2's or AVX-512's in an AVX-512 record, AVX2's only in an AVX2 one.
  const std::string avx2_attention = "\"attention_tiles\": \"avx2\"";
  EXPECT_EQ(refused(with(avx2_attention, "\"attention_tiles\": \"avx512\"")), "attention_tiles: 'avx512' is not avx2");
  EXPECT_EQ(refused(with(avx2_attention, "\"attention_tiles\": \"sse4\"", true)),
            "attention_tiles: 'sse4' is not avx512 or avx2");
  EXPECT_EQ(refused(with(avx2_attention, "\"attention_tile\": \"avx2\"")), "attention_tiles: missing or not a string");
}

// The first product past kTuneAtMacs reads the cache file's record for this CPU, ISA and
// thread count; one below it does not; a second cache file is read again.
TEST(TuningFile, TheFirstLargeProductLoadsTheRecordForThisCpu) {
  if (!detail::kernel_available()) GTEST_SKIP() << "no kernel on this CPU";
  const Isa isa = detail::active_isa();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mhaviz_tuning_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const KernelTuning mine{123, 64, isa == Isa::Avx2 ? 1 : 0, 36};  // an AVX-512 record has no AVX2 tile
  detail::TuningKey other = detail::key_for(isa);
  other.cpu += " (another)";
  write_file_atomic((dir / "kernels.json").string(),
                    detail::tuning_file_json({{other, {1, 1, 0, 12}}, {detail::key_for(isa), mine}}));
  detail::reset_tuning();
  set_kernel_cache((dir / "kernels.json").string());
  std::mt19937 gen(3);
  const Shape small = make_shape(8, 64, 64, gen);
  testing::internal::CaptureStderr();
  run(small);
  EXPECT_NE(detail::active_tuning(isa), mine) << "a small product read the file";
  const int m = static_cast<int>(detail::kTuneAtMacs / (64 * 64));
  const Shape large = make_shape(m, 64, 64, gen);
  const Products got = run(large);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // loaded: no calibration
  EXPECT_EQ(detail::active_tuning(isa), mine);
  EXPECT_NE(kernel_tuning_summary().find("loaded from " + (dir / "kernels.json").string()), std::string::npos)
      << kernel_tuning_summary();
  set_kernel_cache("");
  detail::reset_tuning();
  EXPECT_TRUE(same_bits(run(large).packed, got.packed));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mhaviz
