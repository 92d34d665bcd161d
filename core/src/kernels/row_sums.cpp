#include "kernels/row_sums.hpp"

#include <emmintrin.h>

namespace mhaviz::detail {
namespace {

// Floats x[i], x[i + 1] as two doubles.
__m128d pair(const float* x) {
  return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
}

// The eight partial sums of f(pair) over whole groups of eight, then the rest one at a time.
template <class Pair, class One>
double sum8(const float* x, int n, Pair f, One g) {
  __m128d acc[4] = {_mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd()};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int v = 0; v < 4; ++v) acc[v] = _mm_add_pd(acc[v], f(pair(x + i + 2 * v)));
  double lanes[2];
  _mm_storeu_pd(lanes, _mm_add_pd(_mm_add_pd(acc[0], acc[1]), _mm_add_pd(acc[2], acc[3])));
  double s = lanes[0] + lanes[1];
  for (; i < n; ++i) s += g(static_cast<double>(x[i]));
  return s;
}

}  // namespace

double row_sum(const float* x, int n) {
  return sum8(
      x, n, [](__m128d d) { return d; }, [](double d) { return d; });
}

double row_sum_squared_deviations(const float* x, int n, double mean) {
  const __m128d m = _mm_set1_pd(mean);
  return sum8(
      x, n,
      [m](__m128d d) {
        const __m128d e = _mm_sub_pd(d, m);
        return _mm_mul_pd(e, e);
      },
      [mean](double d) { return (d - mean) * (d - mean); });
}

}  // namespace mhaviz::detail
