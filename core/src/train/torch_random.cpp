// normal_ as torch 1.13 draws it on CPU (see torch_random.hpp). The float functions are the
// Cephes polynomials of avx_mathfun.h (Pommier / Garberoglio), one lane at a time. Torch
// compiles them with GCC's default -ffp-contract=fast for AVX2 + FMA, which fuses a product
// into the sum that is its only use; this file is compiled with -ffp-contract=off and writes
// exactly those fusions as std::fma (found by testing each against a million of torch's values;
// the range reduction's three fusions change 3 of the 2^24 possible angles, seeds 107 and 133
// hit one).
#include "train/torch_random.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "mhaviz/model.hpp"  // torch_uniform

namespace mhaviz::train {
namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Constants as the header spells them: decimal doubles rounded to float.
constexpr float f(double v) { return static_cast<float>(v); }

// log(x) for x in (0, 1] (u1 never leaves it): exponent and mantissa in [√½, √2), then a
// degree-8 polynomial.
[[gnu::always_inline]] inline float cephes_log(float x) {
  x = std::max(x, from_bits(0x00800000u));  // smallest normal float
  const int exponent = static_cast<int>(bits(x) >> 23) - 0x7f;
  x = from_bits((bits(x) & ~0x7f800000u) | bits(0.5f));
  float e = static_cast<float>(exponent) + 1.0f;
  const bool below = x < f(0.707106781186547524);
  const float tmp = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + tmp;
  const float z = x * x;
  static constexpr double p[9] = {7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,
                                  -1.2420140846E-1, 1.4249322787E-1,  -1.6668057665E-1,
                                  2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1};
  float y = f(p[0]);
  for (int k = 1; k < 9; ++k) y = std::fma(y, x, f(p[k]));
  y = y * x;
  y = std::fma(y, z, e * f(-2.12194440e-4));
  y = std::fma(-z, 0.5f, y);
  return std::fma(e, f(0.693359375), x + y);
}

// sin and cos of x >= 0 (x < 2π here): octant j from x·4/π, x reduced by j·π/4 in three
// parts, then the cosine and sine polynomials, chosen and signed by the octant.
[[gnu::always_inline]] inline void cephes_sincos(float x, float& s, float& c) {
  std::uint32_t sign_sin = bits(x) & 0x80000000u;
  x = std::fabs(x);
  int j = static_cast<int>(x * f(1.27323954473516));
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  sign_sin ^= static_cast<std::uint32_t>(j & 4) << 29;
  const std::uint32_t sign_cos = static_cast<std::uint32_t>(~(j - 2) & 4) << 29;
  const bool sine_poly_is_sine = (j & 2) == 0;
  x = std::fma(y, f(-0.78515625), x);
  x = std::fma(y, f(-2.4187564849853515625e-4), x);
  x = std::fma(y, f(-3.77489497744594108e-8), x);
  const float z = x * x;
  float yc = std::fma(f(2.443315711809948E-005), z, f(-1.388731625493765E-003));
  yc = std::fma(yc, z, f(4.166664568298827E-002));
  yc = yc * z;
  yc = std::fma(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;
  float ys = std::fma(f(-1.9515295891E-4), z, f(8.3321608736E-3));
  ys = std::fma(ys, z, f(-1.6666654611E-1));
  ys = ys * z;
  ys = std::fma(ys, x, x);
  s = from_bits(bits(sine_poly_is_sine ? ys : yc) ^ sign_sin);
  c = from_bits(bits(sine_poly_is_sine ? yc : ys) ^ sign_cos);
}

// d (16): uniforms in [0, 1) -> normals, pairs (j, j + 8); torch stores fma(n, std, mean).
[[gnu::always_inline]] inline void box_muller16(float* d, float mean, float std) {
  const float two_pi = static_cast<float>(2.0f * std::numbers::pi);
  for (int j = 0; j < 8; ++j) {
    const float radius = std::sqrt(-2.0f * cephes_log(1.0f - d[j]));
    float s, c;
    cephes_sincos(two_pi * d[j + 8], s, c);
    d[j] = std::fma(radius * c, std, mean);
    d[j + 8] = std::fma(radius * s, std, mean);
  }
}

// The same bits either way: with the FMA instruction where the CPU has it, else libm's fma.
__attribute__((target("fma"))) void box_muller_fma(float* d, std::int64_t blocks, float mean, float std) {
  for (std::int64_t b = 0; b < blocks; ++b) box_muller16(d + 16 * b, mean, std);
}
void box_muller_libm(float* d, std::int64_t blocks, float mean, float std) {
  for (std::int64_t b = 0; b < blocks; ++b) box_muller16(d + 16 * b, mean, std);
}
void box_muller(float* d, std::int64_t blocks, float mean, float std) {
  static const bool fma = __builtin_cpu_supports("fma");
  (fma ? box_muller_fma : box_muller_libm)(d, blocks, mean, std);
}

// at::normal_distribution<double>: two 53-bit uniforms, one value returned, one cached.
double normal_double(TorchGenerator& g) {
  if (g.next_double_normal) {
    const double v = *g.next_double_normal;
    g.next_double_normal.reset();
    return v;
  }
  const double u1 = torch_uniform53(g.mt), u2 = torch_uniform53(g.mt);
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * std::numbers::pi * u1;
  g.next_double_normal = r * std::sin(theta);
  return r * std::cos(theta);
}

}  // namespace

void torch_normal_(TorchGenerator& g, float* data, std::int64_t n, float mean, float std) {
  if (n < 16) {
    for (std::int64_t i = 0; i < n; ++i)
      data[i] = static_cast<float>(normal_double(g) * static_cast<double>(std) + static_cast<double>(mean));
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) data[i] = torch_uniform(g.mt, 0.0f, 1.0f);
  box_muller(data, n / 16, mean, std);
  if (n % 16 != 0) {
    float* tail = data + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = torch_uniform(g.mt, 0.0f, 1.0f);
    box_muller(tail, 1, mean, std);
  }
}

}  // namespace mhaviz::train
