// Which code multiplies the forward's matrices: the project's AVX-512 kernel or Eigen
// on OpenBLAS. Both give the same tensors up to float rounding (tests hold both to the
// loop oracle); `mhaviz bench --backend` times one against the other.
#pragma once

#include <string_view>

namespace mhaviz {

enum class Backend { Avx512, OpenBlas };

std::string_view backend_name(Backend b);  // "avx512", "openblas"
bool parse_backend(std::string_view name, Backend& out);
bool backend_supported(Backend b);  // Avx512 needs a CPU with AVX-512F
// The process-wide choice; starts as Avx512 where supported, else OpenBlas.
Backend backend();
// Returns false, changing nothing, when b is not supported here.
bool set_backend(Backend b);

}  // namespace mhaviz
