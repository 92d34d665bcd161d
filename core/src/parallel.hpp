// A minimal fork-join loop for the element-wise stages. GEMMs are threaded by
// OpenBLAS; a persistent OpenMP pool would spin against OpenBLAS's threads on two
// cores, so this starts plain threads only when the work is large enough to pay.
#pragma once

#include <cstdint>
#include <functional>

namespace mhaviz::detail {

// Calls fn(begin, end) over [0, n) split into contiguous chunks. Runs inline when
// work_per_item * n is below a threshold (teaching sizes stay single-threaded).
void parallel_for(std::int64_t n, std::int64_t work_per_item, const std::function<void(std::int64_t, std::int64_t)>& fn);

}  // namespace mhaviz::detail
