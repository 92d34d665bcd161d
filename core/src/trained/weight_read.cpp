#include "weight_read.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/parallel.hpp"

namespace mhaviz::detail {

std::int64_t WeightBuffers::bytes() const {
  std::int64_t n = 0;
  for (const auto& [p, bytes] : ranges_) n += bytes;
  return n;
}

std::uint64_t WeightBuffers::read_once() const {
  // One loop over chunks of 64 KiB of every range, split over the threads as one range, so the
  // floor pays one hand-over and not one per tensor; each chunk's 64-bit words are summed into
  // its own slot. Shared out as the edit's products are (parallel_for_shared), so that a slow
  // core costs the floor what it costs the edit.
  constexpr std::int64_t kChunk = 1 << 16;
  struct Chunk {
    const unsigned char* p;
    std::int64_t bytes;
  };
  std::vector<Chunk> chunks;
  for (const auto& [p, bytes] : ranges_)
    for (std::int64_t at = 0; at < bytes; at += kChunk) chunks.push_back({p + at, std::min(kChunk, bytes - at)});
  std::vector<std::uint64_t> sums(chunks.size(), 0);
  parallel_for_shared(static_cast<std::int64_t>(chunks.size()), kChunk, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const Chunk& k = chunks[static_cast<std::size_t>(c)];
      std::uint64_t s = 0;
      std::int64_t i = 0;
      for (; i + 8 <= k.bytes; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, k.p + i, 8);
        s += w;
      }
      for (; i < k.bytes; ++i) s += k.p[i];
      sums[static_cast<std::size_t>(c)] = s;
    }
  });
  std::uint64_t total = 0;
  for (const std::uint64_t s : sums) total += s;
  return total;
}

}  // namespace mhaviz::detail
