#include "kernels/rms_norm.hpp"

#include <cmath>

#include "kernels/parallel.hpp"
#include "kernels/row_sums.hpp"

namespace mhaviz::detail {

void rms_norm(const float* in, float* out, std::int64_t rows, int dim, const float* weight, double eps,
              RmsWeight form) {
  const float one = form == RmsWeight::OnePlus ? 1.0f : 0.0f;
  parallel_for(rows, static_cast<std::int64_t>(dim) * 4, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* x = in + r * dim;
      float* y = out + r * dim;
      const double rstd = 1.0 / std::sqrt(row_sum_squared_deviations(x, dim, 0.0) / dim + eps);
      for (int i = 0; i < dim; ++i) y[i] = static_cast<float>(x[i] * rstd) * (one + weight[i]);
    }
  });
}

}  // namespace mhaviz::detail
