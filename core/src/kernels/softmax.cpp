// Row softmax: softmax.hpp. Compiled with -ffp-contract=off (core/CMakeLists.txt): a
// multiply followed by an add must stay two roundings where it is written so, or a build whose
// baseline has FMA (-march=native) would fuse them in one path and not the other; the exp's
// fused steps are written as such (Fused below).
#include "kernels/softmax.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/tuning.hpp"

namespace mhaviz::detail {
namespace {

// exp by Cephes' expf (about 1 ulp): e^x = 2^m · e^r, m = round(x·log2 e), r = x − m·ln 2 in
// two parts, e^r by a polynomial. Below ln(FLT_MIN) (where 2^m would leave the normal range)
// the result is exactly 0, as is the padding's −inf; x ≤ 0 here (x − max), kExpHi guards 2^m.
// In the vector paths such a lane is computed from 0 and masked after: computed from kExpLo
// its product y·2^m rounds to a subnormal, and each such product costs a microcode assist
// (a row's padding made one per row: 60% of the GPT-2 forward's softmax time).
constexpr float kExpLo = -87.33654475f, kExpHi = 88.0f;
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f, kP3 = 4.1665795894e-2f,
                kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;

// Fused: each a·b + c step of it is one fused multiply-add (one rounding), on every path of a
// process whose CPU has FMA (fused_exp()); others keep the product and the sum apart. Fused,
// the AVX2 exp takes 20 operations a vector against 30 and 60% of the time (AMD Zen 4), and is
// no less accurate. A process uses one form in every path, so its paths give the same bits; a
// CPU without FMA gets other bits, as its products (OpenBLAS) already do.
bool fused_exp() {
  static const bool has = __builtin_cpu_supports("fma");
  return has;
}

// a·b + c and c − a·b, rounded once (Fused) or twice.
template <bool Fused>
__m128 madd4(__m128 a, __m128 b, __m128 c);
template <>
__m128 madd4<false>(__m128 a, __m128 b, __m128 c) {
  return _mm_add_ps(_mm_mul_ps(a, b), c);
}
// Not inlined into the SSE path (built for CPUs without FMA): a call per step, on rows of 16
// to 31 keys only where the CPU has AVX2.
template <>
__attribute__((target("fma"))) __m128 madd4<true>(__m128 a, __m128 b, __m128 c) {
  return _mm_fmadd_ps(a, b, c);
}
template <bool Fused>
__m128 nmadd4(__m128 a, __m128 b, __m128 c) {
  if constexpr (Fused) return madd4<true>(_mm_xor_ps(a, _mm_set1_ps(-0.0f)), b, c);
  return _mm_sub_ps(c, _mm_mul_ps(a, b));
}

template <bool Fused>
__m128 exp4(__m128 x) {
  const __m128 normal = _mm_cmpge_ps(x, _mm_set1_ps(kExpLo));
  x = _mm_min_ps(_mm_and_ps(x, normal), _mm_set1_ps(kExpHi));
  const __m128 m = _mm_floor_ps(madd4<Fused>(x, _mm_set1_ps(kLog2e), _mm_set1_ps(0.5f)));
  x = nmadd4<Fused>(m, _mm_set1_ps(kLn2Hi), x);
  x = nmadd4<Fused>(m, _mm_set1_ps(kLn2Lo), x);
  const __m128 z = _mm_mul_ps(x, x);
  __m128 y = _mm_set1_ps(kP0);
  for (float p : {kP1, kP2, kP3, kP4, kP5}) y = madd4<Fused>(y, x, _mm_set1_ps(p));
  y = _mm_add_ps(madd4<Fused>(y, z, x), _mm_set1_ps(1.0f));
  const __m128i e = _mm_slli_epi32(_mm_add_epi32(_mm_cvttps_epi32(m), _mm_set1_epi32(127)), 23);
  return _mm_and_ps(_mm_mul_ps(y, _mm_castsi128_ps(e)), normal);
}

// The AVX2 path runs only where the CPU has FMA too (softmax_wide_available), so fused.
__attribute__((target("avx2,fma"))) __m256 exp8(__m256 x) {
  const __m256 normal = _mm256_cmp_ps(x, _mm256_set1_ps(kExpLo), _CMP_GE_OQ);
  x = _mm256_min_ps(_mm256_and_ps(x, normal), _mm256_set1_ps(kExpHi));
  const __m256 m = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(m, _mm256_set1_ps(kLn2Hi), x);
  x = _mm256_fnmadd_ps(m, _mm256_set1_ps(kLn2Lo), x);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(kP0);
  for (float p : {kP1, kP2, kP3, kP4, kP5}) y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(p));
  y = _mm256_add_ps(_mm256_fmadd_ps(y, z, x), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(m), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), normal);
}

// exp8's operations on 16 lanes (AVX-512F): the same IEEE operations lane by lane, so the same
// bits. The masks that exp8 keeps in a register are mask registers here: a lane below the range
// is computed from 0 and zeroed after, as there. The zero-masking forms with every lane on: GCC 12
// warns that the plain ones' undefined pass-through may be used uninitialised (same instructions).
constexpr __mmask16 kAll = 0xFFFF;
__attribute__((target("avx512f"))) __m512 exp16(__m512 x) {
  const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpLo), _CMP_GE_OQ);
  x = _mm512_maskz_min_ps(kAll, _mm512_maskz_mov_ps(normal, x), _mm512_set1_ps(kExpHi));
  const __m512 m = _mm512_maskz_roundscale_ps(kAll, _mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
                                              _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(m, _mm512_set1_ps(kLn2Hi), x);
  x = _mm512_fnmadd_ps(m, _mm512_set1_ps(kLn2Lo), x);
  const __m512 z = _mm512_mul_ps(x, x);
  __m512 y = _mm512_set1_ps(kP0);
  for (float p : {kP1, kP2, kP3, kP4, kP5}) y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(p));
  y = _mm512_add_ps(_mm512_fmadd_ps(y, z, x), _mm512_set1_ps(1.0f));
  const __m512i e =
      _mm512_maskz_slli_epi32(kAll, _mm512_add_epi32(_mm512_maskz_cvttps_epi32(kAll, m), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(normal, y, _mm512_castsi512_ps(e));
}

// exp4 on one float, in lane 0: the same operations, so the same bits.
template <bool Fused>
float exp1(float x) {
  // Below the range, and NaN (a row holding +inf gives inf − inf), the vector paths mask the
  // lane to 0; here that comes first, as converting NaN to an integer is undefined in C++.
  if (!(x >= kExpLo)) return 0.0f;
  return _mm_cvtss_f32(exp4<Fused>(_mm_set_ss(std::min(x, kExpHi))));
}

// The scale of every path. s / divisor is computed as s · (1 / divisor) when divisor is a
// power of two: the reciprocal is then exact, and the product the same correctly rounded
// number as the quotient (the same bits), for a fraction of a division's cost. sqrt(hd) is 8
// at hd = 64 (GPT-2, the book's 768 / 12). A given factor is a product as written.
struct Scale {
  explicit Scale(ScoreScale s) : by(s.value) {
    int e = 0;
    if (s.op == ScoreScale::Op::Multiply) {
      multiply = true;
    } else if (std::isnormal(s.value) && std::frexp(s.value, &e) == 0.5f) {
      multiply = true;
      by = 1.0f / s.value;
    }
  }
  float operator()(float s) const { return multiply ? s * by : s / by; }
  __m128 operator()(__m128 s) const {
    return multiply ? _mm_mul_ps(s, _mm_set1_ps(by)) : _mm_div_ps(s, _mm_set1_ps(by));
  }
  __attribute__((target("avx2"))) __m256 operator()(__m256 s) const {
    return multiply ? _mm256_mul_ps(s, _mm256_set1_ps(by)) : _mm256_div_ps(s, _mm256_set1_ps(by));
  }
  __attribute__((target("avx512f"))) __m512 operator()(__m512 s) const {
    return multiply ? _mm512_mul_ps(s, _mm512_set1_ps(by)) : _mm512_div_ps(s, _mm512_set1_ps(by));
  }
  float by;
  bool multiply = false;
};

// Scalar pieces both paths share. Divisions are exact IEEE operations, so a quotient has the
// same bits in a vector lane or alone: only the exp and the sum need the same lanes.
// Scratch x [full, n) = s / divisor, and −inf on [n, n8) (e^−inf = 0 adds nothing to a sum).
void scale_tail(const float* s, std::int64_t full, std::int64_t n, Scale scale, float* x) {
  for (std::int64_t j = full; j < n; ++j) x[j] = scale(s[j]);
  std::fill(x + n, x + softmax_scratch(n), -std::numeric_limits<float>::infinity());
}
// The eight lane sums added in a fixed order.
float lane_total(const float* lanes) {
  float sum = lanes[0];
  for (int l = 1; l < 8; ++l) sum += lanes[l];
  return sum;
}

// Steps (the SSE path; the AVX2 one gives their bits in a pass less): 1 scale s into the
// scratch x (padded to n8 with −inf); 2 its max;
// 3 x = e^(x − max), summed per lane l over the elements j ≡ l (mod 8) in order of j;
// 4 w = x / the sum of the lanes.
template <bool Fused>
void softmax_sse(const float* s, std::int64_t n, ScoreScale by, float* x, float* w) {
  const std::int64_t n8 = softmax_scratch(n), full = n / 4 * 4;
  const Scale scale(by);
  for (std::int64_t j = 0; j < full; j += 4) _mm_storeu_ps(x + j, scale(_mm_loadu_ps(s + j)));
  scale_tail(s, full, n, scale, x);
  __m128 mx = _mm_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t j = 0; j < n8; j += 4) mx = _mm_max_ps(mx, _mm_loadu_ps(x + j));
  float m4[4];
  _mm_storeu_ps(m4, mx);
  const __m128 m = _mm_set1_ps(std::max(std::max(m4[0], m4[1]), std::max(m4[2], m4[3])));
  __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
  for (std::int64_t j = 0; j < n8; j += 8) {
    const __m128 a = exp4<Fused>(_mm_sub_ps(_mm_loadu_ps(x + j), m)),
                 b = exp4<Fused>(_mm_sub_ps(_mm_loadu_ps(x + j + 4), m));
    _mm_storeu_ps(x + j, a);
    _mm_storeu_ps(x + j + 4, b);
    lo = _mm_add_ps(lo, a);
    hi = _mm_add_ps(hi, b);
  }
  float lanes[8];
  _mm_storeu_ps(lanes, lo);
  _mm_storeu_ps(lanes + 4, hi);
  const float sum = lane_total(lanes);
  const __m128 t = _mm_set1_ps(sum);
  for (std::int64_t j = 0; j < full; j += 4) _mm_storeu_ps(w + j, _mm_div_ps(_mm_loadu_ps(x + j), t));
  for (std::int64_t j = full; j < n; ++j) w[j] = x[j] / sum;
}

// Step 2 of softmax_avx2 on the raw scores s (n of them, a positive finite scale): the max of
// the scaled row, and tail = the last partial chunk scaled, −inf past n, as the scratch held it.
// Four running maxima of eight lanes, chunk c of each 32 keys into maximum c (the rest into the
// first), combined in order: one chain of maxima waited on each one's latency, and this pass
// took as long as the exp and the division together (rows of 1024 keys, Intel Xeon model 207).
// The order decides only which of two zeros or NaNs a lane keeps. The sign of a zero max
// changes no weight (s − ±0 is s, and e^±0 is 1 exactly); a NaN score gives another row where
// the max keeps it, so both vector paths share this one pass.
__attribute__((target("avx2,fma"))) float scaled_max(const float* s, std::int64_t n, const Scale& scale, float* tail) {
  const std::int64_t full = n / 8 * 8;
  std::fill(tail, tail + 8, -std::numeric_limits<float>::infinity());
  for (std::int64_t j = full; j < n; ++j) tail[j - full] = scale(s[j]);
  __m256 mx = _mm256_set1_ps(-std::numeric_limits<float>::infinity()), m1 = mx, m2 = mx, m3 = mx;
  std::int64_t j = 0;
  for (; j + 32 <= full; j += 32) {
    mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(s + j + 8));
    m2 = _mm256_max_ps(m2, _mm256_loadu_ps(s + j + 16));
    m3 = _mm256_max_ps(m3, _mm256_loadu_ps(s + j + 24));
  }
  for (; j < full; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
  mx = _mm256_max_ps(_mm256_max_ps(mx, m1), _mm256_max_ps(m2, m3));
  mx = scale(mx);
  if (full < n) mx = _mm256_max_ps(mx, _mm256_loadu_ps(tail));
  float m8[8];
  _mm256_storeu_ps(m8, mx);
  return *std::max_element(m8, m8 + 8);
}

// Step 3 of softmax_avx2 from key j0 (a multiple of 8) on: x = e^(scaled s − m) by chunks of 8,
// then the tail's (scaled_max), each added to the eight lane sums acc; returns their total.
__attribute__((target("avx2,fma"))) float exp_from(const float* s, std::int64_t j0, std::int64_t n, const Scale& scale,
                                                   __m256 m, const float* tail, float* x, __m256 acc) {
  const std::int64_t full = n / 8 * 8;
  for (std::int64_t j = j0; j < full; j += 8) {
    const __m256 a = exp8(_mm256_sub_ps(scale(_mm256_loadu_ps(s + j)), m));
    _mm256_storeu_ps(x + j, a);
    acc = _mm256_add_ps(acc, a);
  }
  if (full < n) {
    const __m256 a = exp8(_mm256_sub_ps(_mm256_loadu_ps(tail), m));
    _mm256_storeu_ps(x + full, a);
    acc = _mm256_add_ps(acc, a);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  return lane_total(lanes);
}

// Step 4 without a division where it gives the quotient's bits: x / sum as q = x · (1/sum)
// corrected once, q + (x − q·sum) · (1/sum), both steps fused. With 1/sum correctly rounded
// and q within an ulp of the quotient, x − q·sum is exact and the correction rounds to the
// correctly rounded quotient (Markstein), while nothing underflows: x = 0, or x ≥ 2^-100 with
// sum in [1, 2^100] (a row's sum is at least its max's e^0 = 1; 2^-100 leaves the remainder's
// and the quotient's exponents in the normal range). A chunk with another lane (e^x near
// FLT_MIN, NaN) divides. Checked against the division on 3.2·10^8 quotients of x in
// [e^-88, 1], sum in [1, 4096]: no bit differed. Rows of `from` keys or more: in shorter ones
// the reciprocal's latency and each chunk's check cost more than the divisions (Intel Xeon
// model 207, softmax with the max pass's change: AVX-512 from kQuotientFromAvx512, 64 keys 10%
// slower, 128 keys 4% faster, 256 keys 9%, 1024 keys 22%; AVX2 from kQuotientFromAvx2, 128 and
// 192 keys 4–6% slower, 256 keys level, 1024 keys 15% faster).
constexpr std::int64_t kQuotientFromAvx512 = 128, kQuotientFromAvx2 = 512;
struct Quotient {
  Quotient(float s, std::int64_t n, std::int64_t from)
      : sum(s), inverse(1.0f / s), exact(n >= from && s >= 1.0f && s <= 0x1p100f) {}
  float sum, inverse;
  bool exact;  // sum allows the corrected product
};
__attribute__((target("avx2,fma"))) __m256 quotient(__m256 x, const Quotient& d) {
  const __m256 t = _mm256_set1_ps(d.sum);
  if (d.exact) {
    const __m256 ok = _mm256_or_ps(_mm256_cmp_ps(x, _mm256_set1_ps(0x1p-100f), _CMP_GE_OQ),
                                   _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
    if (_mm256_movemask_ps(ok) == 0xFF) {
      const __m256 r = _mm256_set1_ps(d.inverse), q = _mm256_mul_ps(x, r);
      return _mm256_fmadd_ps(_mm256_fnmadd_ps(q, t, x), r, q);
    }
  }
  return _mm256_div_ps(x, t);
}
__attribute__((target("avx512f"))) __m512 quotient(__m512 x, const Quotient& d) {
  const __m512 t = _mm512_set1_ps(d.sum);
  if (d.exact) {
    const __mmask16 ok = _mm512_cmp_ps_mask(x, _mm512_set1_ps(0x1p-100f), _CMP_GE_OQ) |
                         _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
    if (ok == 0xFFFF) {
      const __m512 r = _mm512_set1_ps(d.inverse), q = _mm512_mul_ps(x, r);
      return _mm512_fmadd_ps(_mm512_fnmadd_ps(q, t, x), r, q);
    }
  }
  return _mm512_div_ps(x, t);
}

// The same bits as the steps above, with step 1 folded into the others: the max of the raw
// scores, scaled, is the max of the scaled ones (a product or quotient by a positive finite
// factor, rounded, never reverses two scores' order, so every lane's running max is the scaled
// running max of the raw lanes), and step 3 scales each score as it loads it. One pass over
// the row less: the forward's softmax ran about a tenth faster (AMD Zen 4, rows of 1 to 1024).
__attribute__((target("avx2,fma"))) void softmax_avx2(const float* s, std::int64_t n, ScoreScale by, float* x,
                                                      float* w) {
  const std::int64_t full = n / 8 * 8;
  const Scale scale(by);
  if (!(std::isfinite(by.value) && by.value > 0.0f)) {  // a factor that could reorder or make NaN: scale first
    for (std::int64_t j = 0; j < full; j += 8) _mm256_storeu_ps(x + j, scale(_mm256_loadu_ps(s + j)));
    scale_tail(s, full, n, scale, x);
    return softmax_avx2(x, n, ScoreScale::multiply(1.0f), x, w);
  }
  float tail[8];
  const __m256 m = _mm256_set1_ps(scaled_max(s, n, scale, tail));
  const float sum = exp_from(s, 0, n, scale, m, tail, x, _mm256_setzero_ps());
  const Quotient d(sum, n, kQuotientFromAvx2);
  for (std::int64_t j = 0; j < full; j += 8) _mm256_storeu_ps(w + j, quotient(_mm256_loadu_ps(x + j), d));
  for (std::int64_t j = full; j < n; ++j) w[j] = x[j] / sum;
}

// softmax_avx2's bits with the exp and the division 16 lanes at a time (AVX-512F): the max pass
// is softmax_avx2's own (scaled_max), and each 16-lane chunk's two halves are added to the eight
// lane sums one after the other, as softmax_avx2 adds two chunks of 8. On an Intel Xeon (model
// 207, AVX-512 at full width) rows of 1024 took 0.79-0.89 of softmax_avx2's time; the kernel's
// backend decides where it runs (softmax_row).
__attribute__((target("avx512f,avx2,fma"))) void softmax_avx512(const float* s, std::int64_t n, ScoreScale by, float* x,
                                                                float* w) {
  const std::int64_t full16 = n / 16 * 16;
  const Scale scale(by);
  if (!(std::isfinite(by.value) && by.value > 0.0f)) return softmax_avx2(s, n, by, x, w);
  float tail[8];
  const float top = scaled_max(s, n, scale, tail);
  const __m512 m16 = _mm512_set1_ps(top);
  const __m256 m = _mm256_set1_ps(top);
  __m256 acc = _mm256_setzero_ps();
  for (std::int64_t j = 0; j < full16; j += 16) {
    const __m512 a = exp16(_mm512_sub_ps(scale(_mm512_loadu_ps(s + j)), m16));
    _mm512_storeu_ps(x + j, a);
    acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, _mm512_castps_pd(a), 0)));
    acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, _mm512_castps_pd(a), 1)));
  }
  const float sum = exp_from(s, full16, n, scale, m, tail, x, acc);
  const Quotient d(sum, n, kQuotientFromAvx512);
  for (std::int64_t j = 0; j < full16; j += 16) _mm512_storeu_ps(w + j, quotient(_mm512_loadu_ps(x + j), d));
  for (std::int64_t j = full16; j < n; ++j) w[j] = x[j] / sum;
}

// Short rows one element at a time (the vector paths' padding and reductions would cost
// more than the row): lane j mod 8 gets element j, as in the vector paths.
template <bool Fused>
void softmax_scalar(const float* s, std::int64_t n, ScoreScale by, float* x, float* w) {
  const Scale scale(by);
  float mx = -std::numeric_limits<float>::infinity();
  for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j] = scale(s[j]));
  float lanes[8] = {};
  for (std::int64_t j = 0; j < n; ++j) lanes[j % 8] += (x[j] = exp1<Fused>(x[j] - mx));
  const float sum = lane_total(lanes);
  for (std::int64_t j = 0; j < n; ++j) w[j] = x[j] / sum;
}

// [SECTION] causal blocks: a head's rows in one pass

// Lanes of chunk c (keys 8c … 8c + 7) that row i may see: j <= i (so j < T too).
__attribute__((target("avx2"))) __m256 causal_lanes(std::int64_t c, std::int64_t i) {
  const __m256i j =
      _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(8 * c)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(i + 1)), j));
}

// Chunk c of a row of T: a load that never reads past the row's end.
__attribute__((target("avx2"))) __m256 load_chunk(const float* row, std::int64_t c, std::int64_t T) {
  if (8 * c + 8 <= T) return _mm256_loadu_ps(row + 8 * c);
  const __m256i lanes =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(T - 8 * c)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_maskload_ps(row + 8 * c, lanes);
}
__attribute__((target("avx2"))) void store_chunk(float* row, std::int64_t c, std::int64_t T, __m256 v) {
  if (8 * c + 8 <= T) return _mm256_storeu_ps(row + 8 * c, v);
  const __m256i lanes =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(T - 8 * c)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  _mm256_maskstore_ps(row + 8 * c, lanes, v);
}

// softmax_avx2's steps on row i over the chunks holding keys 0 … i (the later ones are
// stored as zeros): the same bits. A hidden lane's exp is taken of 0 and masked after, not of
// −inf: e^kExpLo rounds to a subnormal, and every product making one costs a microcode
// assist (three times the whole row's time). The row itself is the scratch.
__attribute__((target("avx2,fma"))) void softmax_causal_avx2(float* s, std::int64_t T, float divisor) {
  const Scale scale(ScoreScale::divide(divisor));
  const std::int64_t chunks = (T + 7) / 8;
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < T; ++i) {
    float* row = s + i * T;
    const std::int64_t seen = i / 8 + 1;
    __m256 mx = neg_inf;
    for (std::int64_t c = 0; c < seen; ++c) {
      const __m256 x = scale(load_chunk(row, c, T));
      store_chunk(row, c, T, x);
      mx = _mm256_max_ps(mx, _mm256_blendv_ps(neg_inf, x, causal_lanes(c, i)));
    }
    float m8[8];
    _mm256_storeu_ps(m8, mx);
    const __m256 m = _mm256_set1_ps(*std::max_element(m8, m8 + 8));
    __m256 acc = _mm256_setzero_ps();
    for (std::int64_t c = 0; c < seen; ++c) {
      const __m256 keep = causal_lanes(c, i);
      const __m256 a = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_blendv_ps(m, load_chunk(row, c, T), keep), m)), keep);
      store_chunk(row, c, T, a);
      acc = _mm256_add_ps(acc, a);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    const __m256 t = _mm256_set1_ps(lane_total(lanes));
    for (std::int64_t c = 0; c < seen; ++c) store_chunk(row, c, T, _mm256_div_ps(load_chunk(row, c, T), t));
    for (std::int64_t c = seen; c < chunks; ++c) store_chunk(row, c, T, _mm256_setzero_ps());
  }
}

__attribute__((target("avx2"))) void softmax_causal_backward_avx2(float* d, const float* att, std::int64_t T,
                                                                  float divisor) {
  const Scale scale(ScoreScale::divide(divisor));
  const std::int64_t chunks = (T + 7) / 8;
  for (std::int64_t i = 0; i < T; ++i) {
    float* dr = d + i * T;
    const float* ar = att + i * T;
    const std::int64_t seen = i / 8 + 1;
    __m256 acc = _mm256_setzero_ps();
    for (std::int64_t c = 0; c < seen; ++c)
      acc = _mm256_add_ps(acc,
                          _mm256_mul_ps(load_chunk(ar, c, T), _mm256_and_ps(load_chunk(dr, c, T), causal_lanes(c, i))));
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    const __m256 dot = _mm256_set1_ps(lane_total(lanes));
    for (std::int64_t c = 0; c < seen; ++c) {
      const __m256 g = _mm256_mul_ps(load_chunk(ar, c, T), _mm256_sub_ps(load_chunk(dr, c, T), dot));
      store_chunk(dr, c, T, _mm256_and_ps(scale(g), causal_lanes(c, i)));
    }
    for (std::int64_t c = seen; c < chunks; ++c) store_chunk(dr, c, T, _mm256_setzero_ps());
  }
}

// Rows shorter than kVectorFrom (the teaching sizes) go one element at a time, rows from
// kWideFrom on in AVX2 where the CPU has it: the widest path gained nothing measurable
// below these lengths here. All three give the same bits.
constexpr std::int64_t kVectorFrom = 16, kWideFrom = 32;
// Rows from this length on in AVX-512 where the kernel's products are (active_isa(): the CPU
// has it and the backend is not held to AVX2).
constexpr std::int64_t kWidestFrom = 64;

}  // namespace

bool softmax_wide_available() {
  static const bool has = __builtin_cpu_supports("avx2") && fused_exp();
  return has;
}

bool softmax_widest_available() {
  static const bool has = __builtin_cpu_supports("avx512f") && softmax_wide_available();
  return has;
}

bool softmax_fused() { return fused_exp(); }

void softmax_row_unfused(SoftmaxPath path, const float* s, std::int64_t n, ScoreScale scale, float* scratch, float* w) {
  (path == SoftmaxPath::Sse ? softmax_sse<false> : softmax_scalar<false>)(s, n, scale, scratch, w);
}

void softmax_row_path(SoftmaxPath path, const float* s, std::int64_t n, ScoreScale scale, float* scratch, float* w) {
  const bool fused = fused_exp();
  (path == SoftmaxPath::Avx512 ? softmax_avx512
   : path == SoftmaxPath::Avx2 ? softmax_avx2
   : path == SoftmaxPath::Sse  ? (fused ? softmax_sse<true> : softmax_sse<false>)
                               : (fused ? softmax_scalar<true> : softmax_scalar<false>))(s, n, scale, scratch, w);
}

void softmax_causal(float* s, std::int64_t T, float divisor) {
  if (softmax_wide_available()) return softmax_causal_avx2(s, T, divisor);
  std::vector<float> scratch(static_cast<std::size_t>(softmax_scratch(T)));
  for (std::int64_t i = 0; i < T; ++i) {
    softmax_row(s + i * T, i + 1, divisor, scratch.data(), s + i * T);
    std::fill(s + i * T + i + 1, s + (i + 1) * T, 0.0f);
  }
}

void softmax_causal_backward(float* d, const float* att, std::int64_t T, float divisor) {
  if (softmax_wide_available()) return softmax_causal_backward_avx2(d, att, T, divisor);
  const Scale scale(ScoreScale::divide(divisor));
  for (std::int64_t i = 0; i < T; ++i) {
    float* dr = d + i * T;
    const float* ar = att + i * T;
    float dot = 0;
    for (std::int64_t j = 0; j <= i; ++j) dot += ar[j] * dr[j];
    for (std::int64_t j = 0; j <= i; ++j) dr[j] = scale(ar[j] * (dr[j] - dot));
    std::fill(dr + i + 1, dr + T, 0.0f);
  }
}

void softmax_row(const float* s, std::int64_t n, ScoreScale scale, float* scratch, float* w) {
  const SoftmaxPath path = n < kVectorFrom ? SoftmaxPath::Scalar
                           : n >= kWidestFrom && softmax_widest_available() && active_isa() == Isa::Avx512
                               ? SoftmaxPath::Avx512
                           : n >= kWideFrom && softmax_wide_available() ? SoftmaxPath::Avx2
                                                                        : SoftmaxPath::Sse;
  softmax_row_path(path, s, n, scale, scratch, w);
}

}  // namespace mhaviz::detail
