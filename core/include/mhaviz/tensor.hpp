// Row-major float tensors with a named shape, the currency of the core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace mhaviz {

using Shape = std::vector<std::int64_t>;

std::int64_t shape_numel(const Shape& shape);
// "(2, 6, 4)", as PyTorch prints torch.Size.
std::string shape_string(const Shape& shape);

struct Tensor {
  Shape shape;
  std::vector<float> data;  // row-major, size == shape_numel(shape)

  Tensor() = default;
  explicit Tensor(Shape s, float fill = 0.0f);

  std::int64_t numel() const { return static_cast<std::int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
  bool empty() const { return data.empty(); }

  // Row-major flat offset of a full index; no bounds checks in release builds.
  std::int64_t offset(std::initializer_list<std::int64_t> index) const;
  float& at(std::initializer_list<std::int64_t> index) { return data[static_cast<std::size_t>(offset(index))]; }
  float at(std::initializer_list<std::int64_t> index) const { return data[static_cast<std::size_t>(offset(index))]; }
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }
};

}  // namespace mhaviz
