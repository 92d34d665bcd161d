#include "mhaviz/export.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "mhaviz/dump.hpp"
#include "mhaviz/tensor_json.hpp"

namespace mhaviz {

std::string to_latex(const float* data, int rows, int cols, int decimals) {
  std::string out = "\\begin{bmatrix} \n";
  char buf[64];
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const float x = data[static_cast<std::size_t>(i) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(j)];
      if (std::isinf(x)) std::snprintf(buf, sizeof buf, "%s\\infty", x < 0 ? "-" : "");
      else if (std::isnan(x)) std::snprintf(buf, sizeof buf, "\\mathrm{NaN}");
      else {
        std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(x));
        if (std::strtod(buf, nullptr) == 0.0 && buf[0] == '-') std::memmove(buf, buf + 1, std::strlen(buf));  // no "-0.0000"
      }
      out += buf;
      out += j + 1 < cols ? " & " : (i + 1 < rows ? " \\\\ \n" : " \n");
    }
  }
  return out + "\\end{bmatrix}\n";
}

std::string to_csv(const float* data, std::int64_t rows, std::int64_t cols) {
  std::string out;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      if (j) out += ',';
      const float x = data[i * cols + j];
      if (std::isinf(x)) out += x < 0 ? "-inf" : "inf";
      else append_number(out, x);
    }
    out += '\n';
  }
  return out;
}

std::string to_npy(const Tensor& t) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < t.shape.size(); ++i) header += std::to_string(t.shape[i]) + (t.shape.size() == 1 || i + 1 < t.shape.size() ? ", " : "");
  if (t.shape.size() == 1) header.resize(header.size() - 1);
  header += "), }";
  // magic (6) + version (2) + length (2) + header + '\n' is padded to a multiple of 64.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>((header.size() >> 8) & 0xFF);
  out += header;
  // x86-64 and every Debian architecture we build for are little-endian, matching '<f4'.
  static_assert(sizeof(float) == 4);
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
  return out;
}

Tensor stage_tensor(const Trace& tr, Stage s) {
  Tensor t({tr.batch, tr.heads, tr.tokens, tr.tokens});
  const std::size_t TT = static_cast<std::size_t>(tr.tokens) * static_cast<std::size_t>(tr.tokens);
  for (int b = 0; b < tr.batch; ++b)
    for (int h = 0; h < tr.heads; ++h)
      tr.stage_matrix(s, b, h, t.data.data() + (static_cast<std::size_t>(b) * static_cast<std::size_t>(tr.heads) + static_cast<std::size_t>(h)) * TT);
  return t;
}

std::vector<NamedTensor> exportable_tensors(const Model& model, const Trace& trace) {
  auto all = named_tensors(model, trace);
  all.push_back({"attn_scores_masked", stage_tensor(trace, Stage::Masked)});
  all.push_back({"attn_scores_scaled", stage_tensor(trace, Stage::Scaled)});
  return all;
}

Tensor select_matrix(const Tensor& t, const std::vector<std::int64_t>& select, std::string_view name) {
  const int lead = std::max(0, t.rank() - 2);
  const std::string label = std::string(name) + " has shape " + shape_string(t.shape);
  if (static_cast<int>(select.size()) != lead)
    throw SessionError("--select: " + label + ": give " + std::to_string(lead) + " leading " + (lead == 1 ? "index" : "indices") +
                       (lead ? " (e.g. --select " + std::string(lead == 1 ? "0" : lead == 2 ? "0,0" : "0,0,0") + ")" : " (none)") +
                       ", got " + std::to_string(select.size()));
  std::int64_t offset = 0;
  for (int d = 0; d < lead; ++d) {
    if (select[static_cast<std::size_t>(d)] < 0 || select[static_cast<std::size_t>(d)] >= t.shape[static_cast<std::size_t>(d)])
      throw SessionError("--select: index " + std::to_string(select[static_cast<std::size_t>(d)]) + " is out of range for dimension " +
                         std::to_string(d) + " of " + label);
    offset = offset * t.shape[static_cast<std::size_t>(d)] + select[static_cast<std::size_t>(d)];
  }
  const std::int64_t rows = t.rank() >= 2 ? t.shape[static_cast<std::size_t>(t.rank() - 2)] : 1;
  const std::int64_t cols = t.rank() >= 1 ? t.shape.back() : 1;
  Tensor m({rows, cols});
  std::copy(t.data.begin() + offset * rows * cols, t.data.begin() + (offset + 1) * rows * cols, m.data.begin());
  return m;
}

}  // namespace mhaviz
