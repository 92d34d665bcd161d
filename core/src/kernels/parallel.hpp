// A fork-join loop for the element-wise stages and the AVX-512 GEMM, over workers that
// spin for at most 50 µs after a loop and then sleep on a futex (no OpenMP: its pool spins
// far longer, against OpenBLAS's threads or the app's software renderer on two cores).
#pragma once

#include <cstdint>
#include <functional>

namespace mhaviz::detail {

// Calls fn(begin, end) over [0, n) split into contiguous chunks. Runs inline when
// work_per_item * n is below a threshold (teaching sizes stay single-threaded), when
// called from inside a loop, or while another thread's loop holds the workers.
void parallel_for(std::int64_t n, std::int64_t work_per_item,
                  const std::function<void(std::int64_t, std::int64_t)>& fn);

// The threads a loop may run on (the caller and the pool's workers).
int parallel_threads();
// True inside a parallel_for body: a loop started there runs inline, on one thread.
bool in_parallel_loop();

}  // namespace mhaviz::detail
