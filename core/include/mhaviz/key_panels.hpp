// The kernel's packed copy of a layer's keys (core/src/kernels/attention.hpp), kept in a trace
// so that a forward recomputing the rows from P on packs only the panels holding keys P and
// later: the keys before P are the ones these panels were packed from.
#pragma once

#include <cstdint>
#include <vector>

namespace mhaviz {

struct KeyPanels {
  std::vector<float> floats;
  // The layout they were packed in (K/V heads, keys, head size) and the keys [from, to) they
  // hold for every head.
  std::int64_t heads = 0, keys = 0, head_dim = 0;
  std::int64_t from = 0, to = 0;
};

}  // namespace mhaviz
