// Kept key panels (mhaviz/key_panels.hpp) against those a fresh forward packed: the GPT and the
// Qwen/Llama/Gemma forwards keep them alike.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "mhaviz/key_panels.hpp"

namespace mhaviz::test {

// kept's panels hold, in every head, the keys they share with fresh ([from, to) of both) with
// fresh's bits, up to the last key. A forward from row P may hold fewer keys before P than a fresh
// one (a sliding window's, packed from P's window on), and the weights' bits check those.
inline void expect_panels_hold(const KeyPanels& kept, const KeyPanels& fresh) {
  ASSERT_EQ(kept.keys, fresh.keys);
  ASSERT_EQ(kept.heads, fresh.heads);
  ASSERT_GE(kept.to, fresh.to);
  const std::int64_t stride = static_cast<std::int64_t>(fresh.floats.size()) / fresh.heads;
  for (std::int64_t g = 0; g < fresh.heads; ++g)
    for (std::int64_t f = std::max(kept.from, fresh.from) * fresh.head_dim; f < fresh.to * fresh.head_dim; ++f)
      ASSERT_EQ(kept.floats[static_cast<std::size_t>(g * stride + f)],
                fresh.floats[static_cast<std::size_t>(g * stride + f)])
          << "head " << g << ", float " << f;
}

}  // namespace mhaviz::test
