// The weights a model holds as byte ranges, and one read of them: the floor of an edit at the
// last position, which must read every weight once (hf_load.cpp, gpt_forward.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "mhaviz/linear.hpp"

namespace mhaviz::detail {

class WeightBuffers {
 public:
  template <class T>
  void add(const std::vector<T>& v) {
    if (!v.empty())
      ranges_.emplace_back(reinterpret_cast<const unsigned char*>(v.data()),
                           static_cast<std::int64_t>(v.size() * sizeof(T)));
  }
  // Whatever form the layer is held in: its weight, float or BF16 panels, and bias.
  void add(const Linear& l) {
    add(l.weight);
    add(l.packed);
    add(l.packed_bf16);
    add(l.bias);
  }
  std::int64_t bytes() const;
  // Every byte once, on the forward's threads; the sum of the ranges as 64-bit words, so
  // that the reads are made.
  std::uint64_t read_once() const;

 private:
  std::vector<std::pair<const unsigned char*, std::int64_t>> ranges_;
};

}  // namespace mhaviz::detail
