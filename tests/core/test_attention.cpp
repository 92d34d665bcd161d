// The attention routine (core/src/kernels/attention.cpp) on every backend: each mask rule and their
// compositions (causal, sliding window, key padding, query and key offsets, grouped K/V
// heads, a given scale) against the loop oracle; rows of a cached prefix equal to the full
// computation bit for bit; and the blocks of a windowed attention reading only their keys.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/attention_reference.hpp"
#include "test_util.hpp"

namespace mhaviz {
namespace {

using detail::AttentionJob;
using detail::ScoreScale;

// The mask's rules as the task states them, written out cell by cell (not through
// AttentionMask), to hold AttentionMask itself to.
bool hidden_by_rule(bool causal, int window, const std::vector<std::uint8_t>& pad, std::int64_t positions, int b,
                    std::int64_t i, std::int64_t j) {
  if (causal && j > i) return true;
  if (window > 0 && !(0 <= i - j && i - j < window)) return true;
  return !pad.empty() && pad[static_cast<std::size_t>(b * positions + j)] != 0;
}

struct Case {
  int batch = 1, heads = 1, kv_heads = 1, rows = 1, keys = 1, hd = 4;
  std::int64_t q_pos = 0, k_pos = 0;
  bool causal = false;
  int window = 0;
  bool padding = false;
  bool keep_scores = false;
  ScoreScale scale = ScoreScale::divide(2.0f);
  std::string label() const {
    return "b " + std::to_string(batch) + " H " + std::to_string(heads) + " G " + std::to_string(kv_heads) + " R " +
           std::to_string(rows) + " Tk " + std::to_string(keys) + " hd " + std::to_string(hd) + " q_pos " +
           std::to_string(q_pos) + " k_pos " + std::to_string(k_pos) + (causal ? " causal" : "") + " window " +
           std::to_string(window) + (padding ? " padding" : "") + (keep_scores ? " scores" : "");
  }
};

// A case's tensors and the job over them.
struct AttentionRun {
  Case c;
  std::vector<float> q, k, v, weights, scores, context;
  std::vector<std::uint8_t> pad;
  AttentionJob job;

  AttentionRun(const Case& cs, std::mt19937& gen) : c(cs) {
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    auto fill = [&](std::size_t n) {
      std::vector<float> x(n);
      for (float& e : x) e = u(gen);
      return x;
    };
    const auto pairs = static_cast<std::size_t>(c.batch * c.heads), kv = static_cast<std::size_t>(c.batch * c.kv_heads);
    const auto R = static_cast<std::size_t>(c.rows), Tk = static_cast<std::size_t>(c.keys),
               hd = static_cast<std::size_t>(c.hd);
    q = fill(pairs * R * hd);
    k = fill(kv * Tk * hd);
    v = fill(kv * Tk * hd);
    weights.assign(pairs * R * Tk, 7.0f);  // garbage the routine must overwrite
    scores.assign(pairs * R * Tk, 7.0f);
    context.assign(pairs * R * hd, 7.0f);
    const std::int64_t positions = c.k_pos + c.keys;
    if (c.padding) {
      std::bernoulli_distribution p(0.25);
      pad.resize(static_cast<std::size_t>(c.batch * positions));
      for (auto& x : pad) x = p(gen) ? 1 : 0;
    }
    job.batch = c.batch;
    job.heads = c.heads;
    job.kv_heads = c.kv_heads;
    job.rows = c.rows;
    job.keys = c.keys;
    job.head_dim = c.hd;
    job.q_pos = c.q_pos;
    job.k_pos = c.k_pos;
    job.q = q.data();
    job.k = k.data();
    job.v = v.data();
    job.q_stride = static_cast<std::int64_t>(R * hd);
    job.kv_stride = static_cast<std::int64_t>(Tk * hd);
    job.mask.causal = c.causal;
    job.mask.window = c.window;
    job.mask.padding = {pad, positions};
    job.scale = c.scale;
    job.weights = weights.data();
    job.raw_scores = c.keep_scores ? scores.data() : nullptr;
    job.out_stride = static_cast<std::int64_t>(R * Tk);
    job.context = context.data();
    job.context_stride = static_cast<std::int64_t>(R * hd);
    job.kernel = backend() != Backend::OpenBlas;
  }
  void run() {
    std::vector<float> workspace;
    detail::attention(job, workspace);
  }
};

std::vector<double> doubles(const float* p, std::size_t n) { return std::vector<double>(p, p + n); }

// Every pair of the run against the oracle (which asks AttentionMask cell by cell), and
// AttentionMask against the rule written out above.
void expect_oracle(const AttentionRun& r) {
  const Case& c = r.c;
  SCOPED_TRACE(c.label());
  const auto R = static_cast<std::size_t>(c.rows), Tk = static_cast<std::size_t>(c.keys),
             hd = static_cast<std::size_t>(c.hd);
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.heads; ++h) {
      const auto p = static_cast<std::size_t>(b * c.heads + h);
      const auto g = static_cast<std::size_t>(b * c.kv_heads + h / (c.heads / c.kv_heads));
      const std::vector<double> q = doubles(r.q.data() + p * R * hd, R * hd),
                                k = doubles(r.k.data() + g * Tk * hd, Tk * hd),
                                v = doubles(r.v.data() + g * Tk * hd, Tk * hd);
      const detail::ReferenceAttention want = detail::attention_reference(q.data(), k.data(), c.rows, c.keys, c.hd,
                                                                          c.q_pos, c.k_pos, r.job.mask, b, c.scale);
      const std::vector<double> ctx = detail::context_reference(want.weights, v.data(), c.rows, c.keys, c.hd);
      for (std::size_t i = 0; i < R; ++i) {
        for (std::size_t j = 0; j < Tk; ++j) {
          const std::int64_t qi = c.q_pos + static_cast<std::int64_t>(i), kj = c.k_pos + static_cast<std::int64_t>(j);
          const bool hidden = hidden_by_rule(c.causal, c.window, r.pad, c.k_pos + c.keys, b, qi, kj);
          ASSERT_EQ(r.job.mask.hides(b, qi, kj), hidden) << "query " << qi << " key " << kj;
          const float w = r.weights[(p * R + i) * Tk + j];
          if (hidden) {
            ASSERT_EQ(w, 0.0f) << "hidden cell (" << i << ", " << j << ") of pair " << p;
          }
          ASSERT_NEAR(w, want.weights[i * Tk + j], 2e-6) << "weight (" << i << ", " << j << ") of pair " << p;
          if (c.keep_scores) {
            const double s = want.scores[i * Tk + j];
            ASSERT_NEAR(r.scores[(p * R + i) * Tk + j], s, 1e-5 + 1e-5 * std::abs(s))
                << "raw score (" << i << ", " << j << ")";
          }
        }
        for (std::size_t d = 0; d < hd; ++d) {
          const double x = ctx[i * hd + d];
          ASSERT_NEAR(r.context[(p * R + i) * hd + d], x, 1e-5 + 1e-5 * std::abs(x))
              << "context (" << i << ", " << d << ")";
        }
      }
    }
}

class AttentionOnBackend : public test::OnBackend {};

TEST_P(AttentionOnBackend, EveryMaskRuleAndCompositionEqualsTheLoopOracle) {
  std::mt19937 gen(17);
  std::vector<Case> cases;
  // Each rule alone, then composed; rows across several blocks (48 on the kernel, 128 on
  // OpenBLAS); head sizes on and off the kernel's lanes.
  for (int window : {0, 1, 5, 70})
    for (bool causal : {false, true})
      for (bool padding : {false, true}) {
        Case c;
        c.rows = c.keys = 150;
        c.hd = 12;
        c.causal = causal;
        c.window = window;
        c.padding = padding;
        c.keep_scores = window == 5;
        cases.push_back(c);
      }
  // Queries at an offset against a longer key sequence (a prefix-cached sequence), with and
  // without a window; keys at an offset (a window's rolling buffer that starts later).
  for (int window : {0, 9}) {
    Case c;
    c.rows = 37;
    c.keys = 190;
    c.q_pos = 153;
    c.causal = true;
    c.window = window;
    c.hd = 8;
    cases.push_back(c);
    c.k_pos = 140;
    c.keys = 50;
    c.q_pos = 150;
    c.rows = 40;
    cases.push_back(c);
  }
  // Grouped K/V heads (6 query heads over 2, and over 1: multi-query), two sequences with
  // their own padding, a given factor instead of a divisor.
  Case g;
  g.batch = 2;
  g.heads = 6;
  g.kv_heads = 2;
  g.rows = g.keys = 60;
  g.hd = 16;
  g.causal = true;
  g.padding = true;
  g.scale = ScoreScale::multiply(0.3f);
  cases.push_back(g);
  g.kv_heads = 1;
  g.window = 7;
  g.keep_scores = true;
  cases.push_back(g);
  // A single query (a decoding step) and a query that sees no key at all (all padded).
  Case one;
  one.rows = 1;
  one.keys = 33;
  one.q_pos = 32;
  one.causal = true;
  cases.push_back(one);
  for (const Case& c : cases) {
    AttentionRun r(c, gen);
    r.run();
    expect_oracle(r);
  }
  Case none;
  none.rows = 3;
  none.keys = 5;
  none.padding = true;
  AttentionRun r(none, gen);
  std::fill(r.pad.begin(), r.pad.end(), 1);
  r.run();
  for (float w : r.weights) EXPECT_EQ(w, 0.0f);
  for (float x : r.context) EXPECT_EQ(x, 0.0f);
}

// Rows [P, T) against all T keys (a prefix-cached sequence: the GPT's recompute after an
// edit, one row at a time as a decoder runs) equal the full computation's rows bit for bit.
// On OpenBLAS the promise holds for offsets that are multiples of kBlasRows.
TEST_P(AttentionOnBackend, RowsOfACachedPrefixEqualTheFullComputationBitForBit) {
  std::mt19937 gen(3);
  const bool blas = backend() == Backend::OpenBlas;
  for (int window : {0, 40}) {
    Case full;
    full.heads = 3;
    full.rows = full.keys = 300;
    full.hd = 24;
    full.causal = true;
    full.window = window;
    AttentionRun whole(full, gen);
    whole.run();
    const std::vector<int> offsets = blas ? std::vector<int>{128, 256} : std::vector<int>{1, 47, 48, 130, 299};
    for (int P : offsets) {
      SCOPED_TRACE("window " + std::to_string(window) + " offset " + std::to_string(P));
      // The same keys and values, queries P.. only.
      Case part = full;
      part.rows = full.rows - P;
      part.q_pos = P;
      AttentionRun tail(part, gen);
      tail.k = whole.k;
      tail.v = whole.v;
      for (int h = 0; h < full.heads; ++h)
        std::copy_n(whole.q.begin() + (h * full.rows + P) * full.hd, part.rows * full.hd,
                    tail.q.begin() + h * part.rows * full.hd);
      tail.job.k = tail.k.data();
      tail.job.v = tail.v.data();
      tail.run();
      for (int h = 0; h < full.heads; ++h) {
        const auto wf = whole.weights.begin() + (h * full.rows + P) * full.keys;
        const auto wt = tail.weights.begin() + h * part.rows * full.keys;
        ASSERT_TRUE(std::equal(wt, wt + part.rows * full.keys, wf)) << "weights of head " << h;
        const auto cf = whole.context.begin() + (h * full.rows + P) * full.hd;
        const auto ct = tail.context.begin() + h * part.rows * full.hd;
        ASSERT_TRUE(std::equal(ct, ct + part.rows * full.hd, cf)) << "context of head " << h;
      }
    }
  }
}

// A job of one query row (an edit at the last position, a decoding step) runs the query heads
// sharing a K/V head as one product of a few rows q_stride apart (attention.cpp's group_of):
// each head's row, in the full computation's tensors, equals that computation's (which equals
// the loop oracle) bit for bit on the kernel (OpenBLAS promises it at offsets that are
// multiples of kBlasRows only: there within rounding), and nothing else is written; 6, 3, 2 and 1
// query heads per K/V head, two sequences with their own padding, with and without a
// window, raw scores kept, head sizes on and off the lanes.
TEST_P(AttentionOnBackend, OneRowOfHeadsSharingKeysEqualsTheFullComputationBitForBit) {
  std::mt19937 gen(29);
  for (const int kv : {1, 2, 3, 6})
    for (const int window : {0, 20})
      for (const int hd : {16, 12}) {
        const Case full{.batch = 2,
                        .heads = 6,
                        .kv_heads = kv,
                        .rows = 70,
                        .keys = 70,
                        .hd = hd,
                        .causal = true,
                        .window = window,
                        .padding = true,
                        .keep_scores = true};
        AttentionRun whole(full, gen);
        whole.pad[69] = whole.pad[70 + 69] = 0;  // the last query sees itself in both sequences
        whole.run();
        expect_oracle(whole);
        // Row T − 1 alone, in the full computation's tensors: query rows T·hd floats apart.
        const int pairs = full.batch * full.heads, T = full.keys;
        AttentionRun last(full, gen);
        SCOPED_TRACE("the last row alone");
        last.q = whole.q;
        last.k = whole.k;
        last.v = whole.v;
        last.pad = whole.pad;
        last.job.q = last.q.data() + (T - 1) * hd;
        last.job.k = last.k.data();
        last.job.v = last.v.data();
        last.job.mask.padding = {last.pad, T};
        last.job.rows = 1;
        last.job.q_pos = T - 1;
        last.job.weights = last.weights.data() + (T - 1) * T;
        last.job.raw_scores = last.scores.data() + (T - 1) * T;
        last.job.context = last.context.data() + (T - 1) * hd;
        last.run();
        for (int p = 0; p < pairs; ++p) {
          const auto row = [&](const std::vector<float>& x, int width) {
            return std::vector<float>(x.begin() + (p * T + T - 1) * width, x.begin() + (p * T + T) * width);
          };
          if (backend() == Backend::OpenBlas) {
            for (int j = 0; j < T; ++j)
              ASSERT_NEAR(row(last.weights, T)[j], row(whole.weights, T)[j], 1e-6)
                  << "weight " << j << " of pair " << p;
            for (int d = 0; d < hd; ++d)
              ASSERT_NEAR(row(last.context, hd)[d], row(whole.context, hd)[d], 1e-5)
                  << "context " << d << " of pair " << p;
          } else {
            ASSERT_EQ(row(last.weights, T), row(whole.weights, T)) << "weights of pair " << p;
            ASSERT_EQ(row(last.scores, T), row(whole.scores, T)) << "raw scores of pair " << p;
            ASSERT_EQ(row(last.context, hd), row(whole.context, hd)) << "context of pair " << p;
          }
          // Nothing written outside the row.
          for (int i = 0; i < T - 1; ++i) {
            ASSERT_EQ(last.weights[static_cast<std::size_t>((p * T + i) * T)], 7.0f) << "pair " << p << " row " << i;
            ASSERT_EQ(last.context[static_cast<std::size_t>((p * T + i) * hd)], 7.0f) << "pair " << p << " row " << i;
          }
        }
      }
}

// Weights now, context later (dropout in between): the context from the same weights equals
// the one computed in the blocks.
TEST_P(AttentionOnBackend, ContextLaterEqualsContextInTheBlocks) {
  std::mt19937 gen(8);
  Case c;
  c.batch = 2;
  c.heads = 2;
  c.kv_heads = 2;
  c.rows = c.keys = 110;
  c.hd = 20;
  c.causal = true;
  c.window = 30;
  AttentionRun r(c, gen);
  r.run();
  const std::vector<float> fused = r.context;
  std::fill(r.context.begin(), r.context.end(), 7.0f);
  detail::attention_context(r.job, r.weights.data());
  EXPECT_EQ(r.context, fused);
}

// Pages a test can make unreadable: keys a windowed block must not read go there, so reading
// one ends the test with SIGSEGV.
class GuardedRows {
 public:
  GuardedRows(std::size_t floats, std::size_t guarded_floats) : bytes_(floats * sizeof(float)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    data_ = static_cast<float*>(p);
    guarded_ = guarded_floats * sizeof(float);
  }
  ~GuardedRows() { munmap(data_, bytes_); }
  float* data() { return data_; }
  void guard() { EXPECT_EQ(mprotect(data_, guarded_, PROT_NONE), 0); }

 private:
  float* data_;
  std::size_t bytes_, guarded_;
};

// A 256-key window at T = 1024: the block of queries [768, 816) sees keys [513, 816) only,
// and neither the packing nor the products read keys or values below them (those rows are
// unreadable here); the result equals the computation with every key readable.
TEST_P(AttentionOnBackend, WindowBlocksReadOnlyTheirKeys) {
  const long page = sysconf(_SC_PAGESIZE);
  const int T = 1024, W = 256, hd = 64, P = 768, R = 48;
  // Keys and values below row 512 fill whole pages (64 floats a row).
  ASSERT_EQ(512 * hd * sizeof(float) % static_cast<std::size_t>(page), 0u);
  std::mt19937 gen(21);
  Case c;
  c.rows = R;
  c.keys = T;
  c.q_pos = P;
  c.hd = hd;
  c.causal = true;
  c.window = W;
  AttentionRun open(c, gen);
  open.run();
  GuardedRows k(static_cast<std::size_t>(T) * hd, 512u * hd), v(static_cast<std::size_t>(T) * hd, 512u * hd);
  std::copy(open.k.begin(), open.k.end(), k.data());
  std::copy(open.v.begin(), open.v.end(), v.data());
  k.guard();
  v.guard();
  AttentionRun guarded(c, gen);
  guarded.q = open.q;
  guarded.job.q = guarded.q.data();
  guarded.job.k = k.data();
  guarded.job.v = v.data();
  guarded.run();
  EXPECT_EQ(guarded.weights, open.weights);
  EXPECT_EQ(guarded.context, open.context);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j)
      if (P + i - j >= W || j > P + i) {
        ASSERT_EQ(open.weights[static_cast<std::size_t>(i * T + j)], 0.0f);
      }
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionOnBackend,
                         ::testing::Values(Backend::Avx512, Backend::Avx2, Backend::OpenBlas), test::backend_label);

}  // namespace
}  // namespace mhaviz
