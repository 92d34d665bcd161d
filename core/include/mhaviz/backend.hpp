// Which code multiplies the forward's matrices: the project's kernel in AVX-512 or in AVX2
// + FMA tiles (chosen at run time from the CPU), or Eigen on OpenBLAS. Both give the same tensors up to float rounding
// (tests hold both to the loop oracle); `mhaviz bench --backend` times one against the other.
#pragma once

#include <string_view>

namespace mhaviz {

enum class Backend { Avx512, Avx2, OpenBlas };

// Rows per block of the products on OpenBLAS, whose small products may sum in another order
// when their shape changes: work that must give the same bits whatever row it starts from
// (the GPT's incremental recompute, a cached prefix) is cut at multiples of it there.
inline constexpr int kBlasRows = 128;

std::string_view backend_name(Backend b);  // "avx512", "avx2", "openblas"
bool parse_backend(std::string_view name, Backend& out);
bool backend_supported(Backend b);  // Avx512 needs AVX-512F, Avx2 needs AVX2 and FMA
// The process-wide choice; starts as the widest kernel the CPU runs, else OpenBlas.
Backend backend();
// Returns false, changing nothing, when b is not supported here.
bool set_backend(Backend b);

// On: the calling thread's loops run on it alone, never on the pool's threads (the same bits:
// loops split work, never sums). For a background job, such as the Train view's trainer, that
// must leave the other cores to the window's drawing (llvmpipe draws on the same cores).
void set_thread_serial(bool on);

}  // namespace mhaviz
