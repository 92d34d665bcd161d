// torch.optim.AdamW (PyTorch 1.13, the single-tensor path it takes by default) in float32.
// Each line of update_range is one of torch's in-place tensor ops; where torch's vectorised
// kernel computes a·x + y as one fused multiply-add (add_ with alpha, addcmul_, addcdiv_),
// so does std::fma here. Compiled with -ffp-contract=off so that nothing else is fused.
#include <cmath>
#include <stdexcept>

#include "mhaviz/train.hpp"
#include "kernels/parallel.hpp"

namespace mhaviz::train {
namespace {

struct Scalars {
  float decay;  // 1 − lr·wd
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bias2_sqrt;  // √(1 − β2^t)
  float eps;
  float neg_step;  // −lr / (1 − β1^t)
};

[[gnu::always_inline]] inline void update_range(const Scalars& s, float* p, const float* g, float* m, float* v,
                                                std::int64_t i0, std::int64_t i1) {
  for (std::int64_t i = i0; i < i1; ++i) {
    p[i] = p[i] * s.decay;                                     // param.mul_(1 - lr * weight_decay)
    m[i] = std::fma(g[i], s.one_minus_beta1, m[i] * s.beta1);  // exp_avg.mul_(β1).add_(grad, alpha=1 - β1)
    v[i] =
        std::fma(s.one_minus_beta2 * g[i], g[i], v[i] * s.beta2);  // exp_avg_sq.mul_(β2).addcmul_(grad, grad, 1 - β2)
    const float denom = std::sqrt(v[i]) / s.bias2_sqrt + s.eps;    // (exp_avg_sq.sqrt() / √bc2).add_(eps)
    p[i] = std::fma(s.neg_step, m[i] / denom, p[i]);               // param.addcdiv_(exp_avg, denom, value=-step_size)
  }
}

// The same bits either way: the FMA instruction where the CPU has it, else libm's fma.
__attribute__((target("fma"))) void update_fma(const Scalars& s, float* p, const float* g, float* m, float* v,
                                               std::int64_t i0, std::int64_t i1) {
  update_range(s, p, g, m, v, i0, i1);
}
void update_libm(const Scalars& s, float* p, const float* g, float* m, float* v, std::int64_t i0, std::int64_t i1) {
  update_range(s, p, g, m, v, i0, i1);
}

}  // namespace

void AdamW::update(std::span<float> params, std::span<const float> grads) {
  const std::size_t n = params.size();
  if (grads.size() != n) throw std::invalid_argument("AdamW: grads do not match the parameters");
  if (exp_avg.empty()) {  // torch creates the state as zeros at the first step
    exp_avg.assign(n, 0.0f);
    exp_avg_sq.assign(n, 0.0f);
  }
  if (exp_avg.size() != n || exp_avg_sq.size() != n)
    throw std::invalid_argument("AdamW: state does not match the parameters");
  ++step;
  // As torch computes them: Python floats (double), rounded to float where a kernel takes them.
  const double t = static_cast<double>(step);
  const double bias1 = 1.0 - std::pow(beta1, t), bias2 = 1.0 - std::pow(beta2, t);
  const Scalars s{static_cast<float>(1.0 - lr * weight_decay),
                  static_cast<float>(beta1),
                  static_cast<float>(1.0 - beta1),
                  static_cast<float>(beta2),
                  static_cast<float>(1.0 - beta2),
                  static_cast<float>(std::sqrt(bias2)),
                  static_cast<float>(eps),
                  static_cast<float>(-(lr / bias1))};
  static const bool fma = __builtin_cpu_supports("fma");
  const auto run = fma ? update_fma : update_libm;
  detail::parallel_for(static_cast<std::int64_t>(n), 8, [&](std::int64_t i0, std::int64_t i1) {
    run(s, params.data(), grads.data(), exp_avg.data(), exp_avg_sq.data(), i0, i1);
  });
}

}  // namespace mhaviz::train
