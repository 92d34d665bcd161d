// The loop oracle of attention.hpp, which both forwards' oracles (reference.cpp,
// gpt_reference.cpp) and the attention tests hold the fast path to: one (query head, K/V
// head) pair in double, cell by cell, asking the mask of every cell. Slow on purpose.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/softmax.hpp"
#include "mhaviz/attention_mask.hpp"

namespace mhaviz::detail {

struct ReferenceAttention {
  std::vector<double> scores;   // (R, Tk) q·kᵀ of every cell, before mask and scale
  std::vector<double> weights;  // (R, Tk) softmax of the scaled scores over visible keys; 0 on hidden ones
};

// q (R, hd): queries at positions q_pos + r; k (Tk, hd): keys at positions k_pos + j; batch:
// the sequence the mask's padding is read for. A row that sees no key has weights 0.
ReferenceAttention attention_reference(const double* q, const double* k, int R, int Tk, int hd, std::int64_t q_pos,
                                       std::int64_t k_pos, const AttentionMask& mask, int batch, ScoreScale scale);

// weights (R, Tk) · v (Tk, hd) -> (R, hd).
std::vector<double> context_reference(const std::vector<double>& weights, const double* v, int R, int Tk, int hd);

}  // namespace mhaviz::detail
