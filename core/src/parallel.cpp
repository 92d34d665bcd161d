#include "parallel.hpp"

#include <algorithm>
#include <thread>
#include <vector>

namespace mhaviz::detail {

void parallel_for(std::int64_t n, std::int64_t work_per_item, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  constexpr std::int64_t kMinWorkPerThread = 1 << 17;  // ~100 µs of element work: thread start is ~30 µs
  const std::int64_t hw = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::thread::hardware_concurrency()));
  const std::int64_t threads = std::min({hw, n, std::max<std::int64_t>(1, n * work_per_item / kMinWorkPerThread)});
  if (threads <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads - 1));
  const std::int64_t chunk = (n + threads - 1) / threads;
  for (std::int64_t t = 1; t < threads; ++t) {
    const std::int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back(fn, b, e);
  }
  fn(0, std::min(n, chunk));
  for (auto& th : pool) th.join();
}

}  // namespace mhaviz::detail
