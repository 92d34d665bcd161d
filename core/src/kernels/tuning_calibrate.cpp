// Calibration (tuning.hpp): candidates timed through gemm_packed on the forward's threads at
// the forward's shapes, one size at a time from the defaults (the tile shape on AVX2, then the
// depth block, then the row block), a candidate kept only if it beats the best so far by 3%
// (timings on a shared machine move by 1-2% from run to run). 6 or 7 candidates × 3 shapes × 3 runs, then
// attention's tiles and rows per block: about two thirds of a second on two cores.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>
#include <utility>

#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/tuning.hpp"
#include "mhaviz/kernel_tuning.hpp"

namespace mhaviz::detail {
namespace {

// The chapter-3 module's and GPT-2's Q/K/V product at T = 128, a Qwen3-0.6B-sized MLP product
// at T = 256, and a decoding step's one-row product.
constexpr CalibrationShape kShapes[] = {{128, 2304, 768}, {256, 3072, 1024}, {1, 2304, 768}};
constexpr int kShapeCount = 3;
constexpr int kRuns = 5;  // best of

struct Operand {
  CalibrationShape shape;
  std::vector<float> a, packed, bias, c;
};

std::vector<Operand> make_operands() {
  std::mt19937 gen(2024);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Operand> out;
  for (const CalibrationShape& s : kShapes) {
    Operand o;
    o.shape = s;
    o.a.resize(static_cast<std::size_t>(s.m) * s.k);
    for (float& x : o.a) x = u(gen);
    std::vector<float> w(static_cast<std::size_t>(s.n) * s.k);
    for (float& x : w) x = u(gen);
    o.packed = pack_transposed(w.data(), s.n, s.k);
    o.bias.resize(static_cast<std::size_t>(s.n));
    for (float& x : o.bias) x = u(gen);
    o.c.resize(static_cast<std::size_t>(s.m) * s.n);
    out.push_back(std::move(o));
  }
  return out;
}

// Seconds of one product per shape.
std::vector<double> time_once(const KernelTuning& t, std::vector<Operand>& ops) {
  using clock = std::chrono::steady_clock;
  std::vector<double> out;
  for (Operand& o : ops) {
    const auto t0 = clock::now();
    gemm_packed_tuned(t, o.shape.m, o.shape.n, o.shape.k, o.a.data(), o.shape.k, o.packed.data(), o.bias.data(),
                      o.c.data(), o.shape.n);
    out.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  return out;
}

struct Timed {
  KernelTuning t;
  std::vector<double> seconds;  // per shape, the fastest run
  int rounds = 0;               // runs each shape's fastest is taken from
};

// Times the candidates not timed yet, in kRuns rounds of one product each per shape, so that
// a burst of load elsewhere on the machine falls on every candidate alike. Past `until` only
// the first round is run: on a machine (or a sanitizer's build) where a product takes tens of
// times longer, calibration stays a few seconds instead of a minute.
void time_stage(const std::vector<KernelTuning>& stage, std::vector<Operand>& ops, std::vector<Timed>& timed,
                std::chrono::steady_clock::time_point until) {
  const std::size_t first = timed.size();
  for (const KernelTuning& t : stage)
    if (std::none_of(timed.begin(), timed.end(), [&](const Timed& x) { return x.t == t; }))
      timed.push_back({t, std::vector<double>(ops.size(), std::numeric_limits<double>::infinity())});
  for (int r = 0; r < kRuns && (r == 0 || std::chrono::steady_clock::now() < until); ++r)
    for (std::size_t i = first; i < timed.size(); ++i) {
      const std::vector<double> s = time_once(timed[i].t, ops);
      for (std::size_t k = 0; k < s.size(); ++k) timed[i].seconds[k] = std::min(timed[i].seconds[k], s[k]);
      ++timed[i].rounds;
    }
}

// Attention's q·kᵀ for one block of query rows against 1024 keys, 64 deep (GPT-2's and the
// book's head size), in the AVX-512 tiles and in the AVX2 ones (t.attn_avx2 false, true):
// seconds of 32 products each, the best of kRuns interleaved rounds. One thread, as each of
// the attention's threads runs its own blocks.
std::pair<double, double> time_attention(const KernelTuning& t) {
  using clock = std::chrono::steady_clock;
  constexpr int kKeys = 1024, kDepth = 64, kRepeat = 32;
  const int m = t.attn_rows;
  std::mt19937 gen(2025);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> q(static_cast<std::size_t>(m) * kDepth), keys(static_cast<std::size_t>(kKeys) * kDepth),
      scores(static_cast<std::size_t>(m) * kKeys);
  for (float& x : q) x = u(gen);
  for (float& x : keys) x = u(gen);
  const std::vector<float> packed = pack_transposed(keys.data(), kKeys, kDepth);
  double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (int r = 0; r < kRuns + 1; ++r)  // the first round warms both up
    for (int narrow = 0; narrow < 2; ++narrow) {
      KernelTuning c = t;
      c.attn_avx2 = narrow == 1;
      const auto t0 = clock::now();
      for (int i = 0; i < kRepeat; ++i)
        gemm_packed_tuned(c, m, kKeys, kDepth, q.data(), kDepth, packed.data(), nullptr, scores.data(), kKeys,
                          Tiles::Attention);
      if (r > 0) best[narrow] = std::min(best[narrow], std::chrono::duration<double>(clock::now() - t0).count());
    }
  return {best[0], best[1]};
}

// Attention's query rows per block (KernelTuning::attn_rows), timed on a whole attention as the
// forward runs it: 4 heads of 64 at T = 1024, causal, raw scores kept (as the lesson and the
// model view keep them), on the forward's threads, each candidate the process's record in turn.
// How many rows keep a block's scores and weights in L2 between its products and its softmax
// depends on the L2's size and ways: on a Zen 4 (1 MiB) the chapter-3 forward at T = 1024 took
// 41-44 ms with 24 rows, 44 with 48, 47 with 96. Seconds per candidate, the best of kRuns
// interleaved rounds after one that warms them up (fewer past `until`).
std::vector<double> time_attention_rows(Isa isa, const KernelTuning& base, const std::vector<int>& rows,
                                        std::chrono::steady_clock::time_point until) {
  using clock = std::chrono::steady_clock;
  constexpr int kHeads = 4, kTokens = 1024, kDepth = 64;
  std::mt19937 gen(2026);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::size_t per_head = static_cast<std::size_t>(kHeads) * kTokens * kDepth;
  std::vector<float> q(per_head), k(per_head), v(per_head), context(per_head);
  for (auto* x : {&q, &k, &v})
    for (float& e : *x) e = u(gen);
  std::vector<float> weights(static_cast<std::size_t>(kHeads) * kTokens * kTokens), raw(weights.size()), workspace;
  AttentionJob job =
      per_head_job(1, kHeads, kTokens, kDepth, 0, q.data(), k.data(), v.data(), weights.data(), context.data(), true);
  job.mask.causal = true;
  job.raw_scores = raw.data();
  std::vector<double> best(rows.size(), std::numeric_limits<double>::infinity());
  for (int r = 0; r <= kRuns && (r < 2 || clock::now() < until); ++r)
    for (std::size_t i = 0; i < rows.size(); ++i) {
      KernelTuning t = base;
      t.attn_rows = rows[i];
      const TrialRecord trial(isa, t);
      const auto t0 = clock::now();
      attention(job, workspace);
      if (r > 0) best[i] = std::min(best[i], std::chrono::duration<double>(clock::now() - t0).count());
    }
  return best;
}

std::string candidate_name(Isa isa, const KernelTuning& t) {
  std::string out = isa == Isa::Avx2 ? "tile " + tile_name(t.avx2_tile) + ", " : "";
  out += "row block " + (t.row_block_kib > 0 ? std::to_string(t.row_block_kib) + " KiB" : std::string("none"));
  return out + ", depth block " + (t.depth_block > 0 ? std::to_string(t.depth_block) : std::string("none"));
}

}  // namespace

KernelTuning calibrate(Isa isa, CalibrationReport* report) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const CacheSizes caches = cache_sizes();
  std::vector<Operand> ops = make_operands();
  const KernelTuning defaults = default_tuning(isa, caches);
  // Warm-up, a quarter of a second of products: operands into the caches, the pool's threads
  // awake, and past a fresh process's first tenth of a second of two-thread work, which runs at
  // about half speed on this kind of virtual machine (timed from there, every candidate came out
  // at 200–270 GFLOP/s where the same products run at 450 and more, and the choice changed
  // from one run to the next).
  for (const auto until = clock::now() + std::chrono::milliseconds(250); clock::now() < until;)
    time_once(defaults, ops);
  std::vector<Timed> timed;
  // The rounds' budget: about 0.4 s of timing on this machine when quiet, so it binds only
  // where products are far slower.
  const auto until = clock::now() + std::chrono::milliseconds(1500);
  time_stage({defaults}, ops, timed, until);
  // Each shape's time against the defaults', summed: every shape counts alike.
  const auto score = [&](const KernelTuning& t) {
    const Timed& x = *std::find_if(timed.begin(), timed.end(), [&](const Timed& y) { return y.t == t; });
    double sum = 0;
    for (std::size_t i = 0; i < x.seconds.size(); ++i) sum += x.seconds[i] / timed[0].seconds[i];
    return sum;
  };
  KernelTuning best = defaults;
  double best_score = score(best);
  // One size at a time: the candidates of a stage differ from the best so far in that size only.
  const auto stage = [&](const std::vector<KernelTuning>& candidates) {
    time_stage(candidates, ops, timed, until);
    for (const KernelTuning& t : candidates)
      if (const double sc = score(t); sc < best_score * 0.97) {
        best = t;
        best_score = sc;
      }
  };
  std::vector<KernelTuning> c;
  if (isa == Isa::Avx2) {
    for (int tile = 0; tile < kAvx2TileCount; ++tile)
      c.push_back({best.row_block_kib, best.depth_block, tile, best.attn_rows});
    stage(c);
  }
  c.clear();
  for (const int depth : {0, 128, 256}) c.push_back({best.row_block_kib, depth, best.avx2_tile, best.attn_rows});
  stage(c);
  c.clear();
  const int l2_kib = static_cast<int>(caches.l2 / 1024);
  for (const int kib : {l2_kib / 4, l2_kib / 2, l2_kib, 0})
    c.push_back({kib, best.depth_block, best.avx2_tile, best.attn_rows});
  stage(c);
  // Attention's short products on a CPU with both kernels: the AVX2 tiles where they win by 3%.
  std::string attention;
  if (isa == Isa::Avx512 && avx2_available()) {
    const auto [wide, narrow] = time_attention(best);
    best.attn_avx2 = narrow < wide * 0.97;
    const double flop = 2.0 * best.attn_rows * 1024 * 64 * 32;
    char line[200];
    std::snprintf(line, sizeof line,
                  "attention's q·kᵀ (%d × 64 · 64 × 1024, one thread): %.1f GFLOP/s in 12x32 tiles, %.1f in AVX2 "
                  "tiles; chose %s",
                  best.attn_rows, flop / wide / 1e9, flop / narrow / 1e9, best.attn_avx2 ? "AVX2" : "12x32");
    attention = line;
  }
  // Attention's rows per block, against the default from the L2's size: the others where they
  // win by 3%. Only for the kernel products run in now, whose record attention reads.
  std::string attention_rows;
  if (isa == active_isa()) {
    std::vector<int> rows{best.attn_rows};
    for (const int r : {24, 48, 96})
      if (r != best.attn_rows) rows.push_back(r);
    const std::vector<double> s = time_attention_rows(isa, best, rows, until);
    std::size_t chosen = 0;
    for (std::size_t i = 1; i < rows.size(); ++i)
      if (s[i] < s[0] * 0.97 && s[i] < s[chosen]) chosen = i;
    attention_rows = "attention's blocks (4 heads × 1024 keys of 64, causal, raw scores kept):";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      char part[64];
      std::snprintf(part, sizeof part, "%s %d rows %.2f ms", i == 0 ? "" : ",", rows[i], s[i] * 1e3);
      attention_rows += part;
    }
    attention_rows += "; chose " + std::to_string(rows[chosen]);
    best.attn_rows = rows[chosen];
  }
  if (report) {
    const TuningKey key = key_for(isa);
    report->cpu = key.cpu;
    report->isa = key.isa;
    report->threads = key.threads;
    report->shapes.assign(std::begin(kShapes), std::end(kShapes));
    report->rows.clear();
    for (const Timed& x : timed) {
      CalibrationRow row{candidate_name(isa, x.t), {}, x.rounds};
      for (int i = 0; i < kShapeCount; ++i) {
        const CalibrationShape& s = kShapes[i];
        row.gflops.push_back(2.0 * s.m * s.n * s.k / x.seconds[static_cast<std::size_t>(i)] / 1e9);
      }
      report->rows.push_back(std::move(row));
    }
    report->attention = attention;
    report->attention_rows = attention_rows;
    report->seconds = std::chrono::duration<double>(clock::now() - start).count();
  }
  return best;
}

}  // namespace mhaviz::detail
