#include "mhaviz/tensor.hpp"

#include <cassert>

namespace mhaviz {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_string(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

Tensor::Tensor(Shape s, float fill) : shape(std::move(s)), data(static_cast<std::size_t>(shape_numel(shape)), fill) {}

std::int64_t Tensor::offset(std::initializer_list<std::int64_t> index) const {
  assert(index.size() == shape.size());
  std::int64_t off = 0;
  std::size_t d = 0;
  for (auto i : index) {
    assert(i >= 0 && i < shape[d]);
    off = off * shape[d] + i;
    ++d;
  }
  return off;
}

}  // namespace mhaviz
