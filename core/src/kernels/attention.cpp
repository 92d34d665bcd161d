// The attention routine (attention.hpp). Steps of a block of query rows [r0, r1) of one pair:
// 1 scores = q·kᵀ over the keys the block's rows may see (every key when raw scores are
// kept); 2 per row, softmax of the scaled scores over the row's keys, padding as −inf (an
// exact 0 in the softmax), 0 elsewhere; 3 context = weights · v over the block's keys.
#include "kernels/attention.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <limits>

#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"
#include "kernels/tuning.hpp"
#include "mhaviz/backend.hpp"

namespace mhaviz::detail {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

// Where the job's blocks fall: query rows in blocks of `size` aligned to absolute positions.
struct Blocks {
  int size;
  std::int64_t first;  // position where block 0 starts (≤ q_pos)
  std::int64_t count;  // blocks per pair
};

Blocks blocks_of(const AttentionJob& j) {
  Blocks b;
  b.size = j.kernel ? active_tuning(active_isa()).attn_rows : kBlasRows;
  b.first = j.q_pos / b.size * b.size;
  b.count = j.rows == 0 ? 0 : (j.q_pos + j.rows - b.first + b.size - 1) / b.size;
  return b;
}

// One block of one pair: its rows, pointers and the keys its rows may see.
struct Unit {
  std::int64_t pair;
  int batch;       // the pair's sequence
  int r0, r1;      // query rows (relative to the job's first)
  const float* k;  // the pair's K/V head: (Tk, hd)
  const float* v;
  std::int64_t kv;  // its index, b·G + h / (H / G)
  KeyRange cols;    // key columns (relative) any row of the block may see
};

KeyRange present(const AttentionJob& j) { return {j.k_pos, j.k_pos + j.keys}; }

// Key columns of row r: the mask's range, relative to the first key.
KeyRange row_keys(const AttentionJob& j, int r) {
  const KeyRange k = j.mask.keys(j.q_pos + r, present(j));
  return {k.begin - j.k_pos, std::max(k.begin, k.end) - j.k_pos};
}

Unit unit_of(const AttentionJob& j, const Blocks& b, std::int64_t u) {
  Unit out;
  out.pair = u / b.count;
  const std::int64_t start = b.first + (u % b.count) * b.size;
  out.r0 = static_cast<int>(std::max(start, j.q_pos) - j.q_pos);
  out.r1 = static_cast<int>(std::min(start + b.size, j.q_pos + j.rows) - j.q_pos);
  const int h = static_cast<int>(out.pair % j.heads);
  out.batch = static_cast<int>(out.pair / j.heads);
  out.kv = static_cast<std::int64_t>(out.batch) * j.kv_heads + h / (j.heads / j.kv_heads);
  out.k = j.k + out.kv * j.kv_stride;
  out.v = j.v + out.kv * j.kv_stride;
  // Both ends of a row's range grow with the row (attention_mask.hpp).
  const KeyRange first = row_keys(j, out.r0), last = row_keys(j, out.r1 - 1);
  out.cols = {first.begin, std::max(first.begin, last.end)};
  return out;
}

// Step 2 for rows [r0, r1): s (rows of Tk, scores) -> w (rows of Tk). s may be w.
void softmax_block(const AttentionJob& j, const Unit& u, const float* s, float* w, float* scratch) {
  const std::int64_t Tk = j.keys;
  for (int r = u.r0; r < u.r1; ++r) {
    const float* srow = s + static_cast<std::int64_t>(r - u.r0) * Tk;
    float* wrow = w + static_cast<std::int64_t>(r - u.r0) * Tk;
    const KeyRange keys = row_keys(j, r);
    std::int64_t seen = keys.size();
    if (!j.mask.padding.empty() && seen > 0) {
      for (std::int64_t c = keys.begin; c < keys.end; ++c) {
        const bool pad = j.mask.padding(u.batch, j.k_pos + c);
        wrow[c] = pad ? -std::numeric_limits<float>::infinity() : srow[c];
        seen -= pad ? 1 : 0;
      }
      srow = wrow;
    }
    if (seen == 0) {
      std::fill(wrow, wrow + Tk, 0.0f);
      continue;
    }
    softmax_row(srow + keys.begin, keys.size(), j.scale, scratch, wrow + keys.begin);
    std::fill(wrow, wrow + keys.begin, 0.0f);
    std::fill(wrow + keys.end, wrow + Tk, 0.0f);
  }
}

float* pair_rows(float* base, std::int64_t stride, const Unit& u, std::int64_t row_floats) {
  return base + u.pair * stride + static_cast<std::int64_t>(u.r0) * row_floats;
}

// Step 3 for one unit: context rows = weights rows · v over the unit's key columns. Its rows
// are the unit's rows of one pair, or (a group, see group_of) one row of each of its pairs,
// weights rows ldw floats apart and context rows ldc apart.
void context_block(const AttentionJob& j, const Unit& u, const float* w, int rows, std::int64_t ldw, std::int64_t ldc) {
  const int hd = j.head_dim;
  float* ctx = pair_rows(j.context, j.context_stride, u, hd);
  const KeyRange c = u.cols;
  if (c.empty()) {
    for (int r = 0; r < rows; ++r) std::fill_n(ctx + r * ldc, hd, 0.0f);
  } else if (j.kernel) {
    gemm_rowmajor(rows, hd, static_cast<int>(c.size()), w + c.begin, ldw, u.v + c.begin * hd, hd, ctx, ldc, false,
                  Tiles::Attention);
  } else {
    Eigen::Map<RowMat, 0, Eigen::OuterStride<>>(ctx, rows, hd, Eigen::OuterStride<>(ldc)).noalias() =
        Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>(w, rows, j.keys, Eigen::OuterStride<>(ldw))
            .middleCols(c.begin, c.size()) *
        CMap(u.v, j.keys, hd).middleRows(c.begin, c.size());
  }
}

void context_block(const AttentionJob& j, const Unit& u, const float* w) {
  context_block(j, u, w, u.r1 - u.r0, j.keys, j.head_dim);
}

// Query heads per kernel unit: one, or, when the job has one query row (an edit at the last
// position, a decoding step), all the heads sharing a K/V head. Their rows are then q_stride
// apart and one product of a few rows reads the K/V head's keys and values for all of them,
// once instead of once per query head. Such an edit is bound by reading keys and values: in a
// 47 ms edit of Qwen3-0.6B at T = 256 (BF16, AVX2), its 28 layers' attention took 5.7 ms for
// 56 MiB of them, on one thread, each read twice; 2.8 ms grouped, on two threads.
int group_of(const AttentionJob& j) { return j.rows == 1 ? j.heads / j.kv_heads : 1; }

// Steps 1-3 of one unit on the kernel for n pairs from u's (n > 1 only with one row each);
// kp: their K/V head packed (pack_transposed).
void kernel_unit(const AttentionJob& j, const Unit& u, int n, const float* kp, float* scratch) {
  const int hd = j.head_dim, rows = (u.r1 - u.r0) * n;
  const std::int64_t lda = n > 1 ? j.q_stride : hd, ldw = n > 1 ? j.out_stride : j.keys;
  float* w = pair_rows(j.weights, j.out_stride, u, j.keys);
  float* s = j.raw_scores ? pair_rows(j.raw_scores, j.out_stride, u, j.keys) : w;
  // Scores from the panel holding the block's first key on (the panels are kPanel keys
  // wide); all of them when they are kept.
  const std::int64_t from = j.raw_scores ? 0 : u.cols.begin / kPanel * kPanel, to = j.raw_scores ? j.keys : u.cols.end;
  if (to > from)
    gemm_packed(rows, static_cast<int>(to - from), hd, j.q + u.pair * j.q_stride + static_cast<std::int64_t>(u.r0) * hd,
                lda, kp + from / kPanel * hd * kPanel, nullptr, s + from, ldw, Tiles::Attention);
  for (int i = 0; i < n; ++i) {
    Unit each = u;
    each.pair = u.pair + i;
    softmax_block(j, each, s + i * j.out_stride, w + i * j.out_stride, scratch);
  }
  if (j.context) context_block(j, u, w, rows, ldw, n > 1 ? j.context_stride : hd);
}

void kernel_attention(const AttentionJob& j, const Blocks& b, KeyPanels& kp) {
  // kᵀ of every K/V head as packed panels, not row-major (hd, Tk): rows Tk floats apart fall
  // in the same L1 set at Tk = 1024, and the tiles then ran at 60 % of their speed on AVX2.
  // Only the panels holding keys some query may see (a window's, a decoding step's), unless
  // every raw score is kept. Never shrunk: growing it back on the next call would zero megabytes.
  const int hd = j.head_dim;
  const std::int64_t packed = packed_size(j.keys, hd), kv = static_cast<std::int64_t>(j.batch) * j.kv_heads;
  const KeyRange first = row_keys(j, 0), last = row_keys(j, j.rows - 1);
  const std::int64_t from = j.raw_scores ? 0 : first.begin / kPanel * kPanel, to = j.raw_scores ? j.keys : last.end;
  // Panels of the same layout holding only unchanged keys stay: an edit at the last position
  // of Qwen3-0.6B packed every layer's keys again, 6% of its time.
  const std::int64_t still = std::min(kp.to, j.keys_unchanged);
  const bool keep = kp.heads == kv && kp.keys == j.keys && kp.head_dim == hd && kp.from <= from && still > from;
  const std::int64_t pack_from = keep ? still / kPanel * kPanel : from;
  // In the panel holding key `still`, only the columns of keys still and later are written (the
  // edit's one key of 32): copying the panel's kept keys again read them all back from memory.
  const int first_key = keep ? static_cast<int>(still - pack_from) : 0;
  if (kp.floats.size() < static_cast<std::size_t>(kv * packed)) kp.floats.resize(static_cast<std::size_t>(kv * packed));
  float* ws = kp.floats.data();
  if (to > pack_from)
    parallel_for(kv, (to - pack_from) * hd, [&](std::int64_t g0, std::int64_t g1) {
      for (std::int64_t g = g0; g < g1; ++g)
        pack_transposed_into(j.k + (g * j.kv_stride + pack_from * hd), static_cast<int>(to - pack_from), hd,
                             ws + g * packed + pack_from * hd, first_key);
    });
  kp.heads = kv;
  kp.keys = j.keys;
  kp.head_dim = hd;
  kp.from = keep ? kp.from : from;
  kp.to = std::max(to, pack_from);
  const int n = group_of(j);
  const std::int64_t units = static_cast<std::int64_t>(j.batch) * j.heads / n * b.count;
  const std::int64_t block = std::min<std::int64_t>(b.size, j.rows), rows = block * n,
                     span = j.mask.window > 0 ? j.mask.window + block : j.keys;
  // A unit's work: its products, plus streaming its K/V head (as much time as about 8 rows'
  // products): one-row units are worth two threads at T = 256, not at T = 16.
  parallel_for_shared(units, std::max<std::int64_t>(1, (rows + 8) * std::min<std::int64_t>(span, j.keys) * hd / 32),
                      [&](std::int64_t u0, std::int64_t u1) {
                        // Kept by the thread: the loop calls this several times on each.
                        thread_local std::vector<float> scratch;
                        if (scratch.size() < static_cast<std::size_t>(softmax_scratch(j.keys)))
                          scratch.resize(static_cast<std::size_t>(softmax_scratch(j.keys)));
                        for (std::int64_t i = u0; i < u1; ++i) {
                          const Unit u = unit_of(j, b, i * n);
                          kernel_unit(j, u, n, ws + u.kv * packed, scratch.data());
                        }
                      });
}

// On OpenBLAS: units one after another, each product threaded inside OpenBLAS, the block's
// softmax rows over threads here.
void blas_attention(const AttentionJob& j, const Blocks& b) {
  const int hd = j.head_dim;
  const std::int64_t units = static_cast<std::int64_t>(j.batch) * j.heads * b.count;
  for (std::int64_t i = 0; i < units; ++i) {
    const Unit u = unit_of(j, b, i);
    const int m = u.r1 - u.r0;
    float* w = pair_rows(j.weights, j.out_stride, u, j.keys);
    float* s = j.raw_scores ? pair_rows(j.raw_scores, j.out_stride, u, j.keys) : w;
    const KeyRange c = j.raw_scores ? KeyRange{0, j.keys} : u.cols;
    if (!c.empty())
      Map(s, m, j.keys).middleCols(c.begin, c.size()).noalias() =
          CMap(j.q + u.pair * j.q_stride + static_cast<std::int64_t>(u.r0) * hd, m, hd) *
          CMap(u.k, j.keys, hd).middleRows(c.begin, c.size()).transpose();
    parallel_for(m, std::max<std::int64_t>(1, j.keys * 8), [&](std::int64_t a, std::int64_t e) {
      std::vector<float> scratch(static_cast<std::size_t>(softmax_scratch(j.keys)));
      Unit rows = u;
      rows.r0 = u.r0 + static_cast<int>(a);
      rows.r1 = u.r0 + static_cast<int>(e);
      softmax_block(j, rows, s + a * j.keys, w + a * j.keys, scratch.data());
    });
    if (j.context) context_block(j, u, w);
  }
}

}  // namespace

AttentionJob per_head_job(int b, int H, int T, int hd, int start, const float* q, const float* k, const float* v,
                          float* weights, float* context, bool kernel) {
  AttentionJob j;
  j.batch = b;
  j.heads = j.kv_heads = H;
  j.rows = T - start;
  j.keys = T;
  j.head_dim = hd;
  j.q_pos = start;
  j.q = q + static_cast<std::int64_t>(start) * hd;
  j.k = k;
  j.v = v;
  j.q_stride = j.kv_stride = j.context_stride = static_cast<std::int64_t>(T) * hd;
  j.scale = ScoreScale::sqrt_head_dim(hd);
  j.weights = weights + static_cast<std::int64_t>(start) * T;
  j.out_stride = static_cast<std::int64_t>(T) * T;
  j.context = context ? context + static_cast<std::int64_t>(start) * hd : nullptr;
  j.kernel = kernel;
  return j;
}

void attention(const AttentionJob& j, KeyPanels& keys) {
  const Blocks b = blocks_of(j);
  if (b.count == 0) return;
  if (j.kernel)
    kernel_attention(j, b, keys);
  else
    blas_attention(j, b);
}

void attention(const AttentionJob& j, std::vector<float>& workspace) {
  KeyPanels keys;  // no layout: every panel the job reads is packed
  keys.floats.swap(workspace);
  attention(j, keys);
  workspace.swap(keys.floats);
}

void attention_context(const AttentionJob& j, const float* weights) {
  const Blocks b = blocks_of(j);
  const std::int64_t units = static_cast<std::int64_t>(j.batch) * j.heads * b.count;
  // Kernel: units over threads; OpenBLAS: one after another, threaded inside.
  auto run = [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t i = u0; i < u1; ++i) {
      const Unit u = unit_of(j, b, i);
      context_block(j, u, weights + u.pair * j.out_stride + static_cast<std::int64_t>(u.r0) * j.keys);
    }
  };
  if (j.kernel)
    parallel_for_shared(
        units, std::max<std::int64_t>(1, std::min<std::int64_t>(b.size, j.rows) * j.keys * j.head_dim / 64), run);
  else
    run(0, units);
}

}  // namespace mhaviz::detail
