// Matrices and tensors as teaching material: LaTeX bmatrix (as seed 004 writes them),
// CSV, and NumPy .npy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/model.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/tensor.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

// data: (rows, cols) row-major. "\begin{bmatrix} \n0.6323 & -0.2366 \\ \n...\n\end{bmatrix}",
// fixed `decimals`; -inf as -\infty.
std::string to_latex(const float* data, int rows, int cols, int decimals = 4);
// One line per row, values with 9 significant digits, "-inf" for masked cells.
std::string to_csv(const float* data, std::int64_t rows, std::int64_t cols);
// NPY format 1.0, little-endian float32 ('<f4'), C order, header padded to 64 bytes.
std::string to_npy(const Tensor& t);

// A stage of every head as one (b, h, T, T) tensor (masked cells -inf for masked/scaled).
Tensor stage_tensor(const Trace& trace, Stage s);

// Every tensor `mhaviz export` can name: named_tensors() plus "attn_scores_masked" and
// "attn_scores_scaled".
std::vector<NamedTensor> exportable_tensors(const Model& model, const Trace& trace);

// The (rows, cols) matrix at the leading indices `select` of t (rank(t) - 2 of them).
// Throws SessionError("--select: ...") when the indices do not fit the shape.
Tensor select_matrix(const Tensor& t, const std::vector<std::int64_t>& select, std::string_view name);

}  // namespace mhaviz
