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

// The same, with the threads taking chunks from a shared cursor as they finish them, each
// half the items left over the threads, so that a core slowed by other work (another process,
// a busy SMT sibling, a neighbour on a shared host) takes fewer items instead of holding the
// others up at the join. fn may be called several times on one thread: only for loops whose
// items are independent (the products' panels, attention's blocks), whose results cannot
// depend on which call computed them.
void parallel_for_shared(std::int64_t n, std::int64_t work_per_item,
                         const std::function<void(std::int64_t, std::int64_t)>& fn);

// The threads a loop may run on (the caller and the pool's workers).
int parallel_threads();
// True where a loop would run inline, on the calling thread alone: inside a parallel_for body,
// or on a thread set serial (set_thread_serial). Calibration times nothing there.
bool loops_run_inline();

}  // namespace mhaviz::detail
