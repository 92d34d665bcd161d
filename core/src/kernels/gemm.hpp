// An AVX-512 single-precision GEMM for the forward's products. OpenBLAS would do the
// same work, but this machine's kind of CPU gets its AVX2 kernels whenever the
// environment sets OPENBLAS_CORETYPE, and small-M products (T = 128 against 768-wide
// weights) reach a fraction of peak there. Weights are packed once per model; the
// activations are read in place. The same tiles exist for AVX2 + FMA (16-column halves of
// each panel), for CPUs without AVX-512 (most laptops); both compute every element as the
// same FMA chain, so they give the same bits. The gemm_ functions need kernel_available().
#pragma once

#include <cstdint>
#include <vector>

namespace mhaviz::detail {

// Columns per packed panel: two 16-float registers.
inline constexpr int kPanel = 32;

// True when the CPU (as reported by CPUID) has AVX-512F; AVX2 and FMA; either of them.
bool avx512_available();
bool avx2_available();
bool kernel_available();

// w: (n, k) row-major, a Linear's [out, in]. Returns wᵀ as ceil(n / kPanel) panels,
// each (k, kPanel) row-major, columns past n zero: the B operand of gemm_packed.
std::vector<float> pack_transposed(const float* w, int n, int k);
// The same panels written into out, which holds packed_size(n, k) floats: for operands packed
// on every forward (a head's keys), into a buffer that is reused. With first > 0 only columns
// [first, n) are written (and the zeros past n): the others hold what an earlier packing of
// the same rows wrote there.
std::int64_t packed_size(int n, int k);
void pack_transposed_into(const float* w, int n, int k, float* out, int first = 0);
// The inverse: packed panels of an (n, k) matrix -> the (n, k) row-major matrix.
std::vector<float> unpack_transposed(const float* packed, int n, int k);

// The same panels holding bfloat16 bit patterns, for weights stored as BF16: half the
// memory of float32 panels, and a product of a few rows (an edit at the last position)
// streams half the bytes. w: (n, k) row-major BF16 as stored (any alignment). Widening a
// BF16 value is exact, so a product with these panels has the bits of one with
// pack_transposed of the widened weight.
std::vector<std::uint16_t> pack_transposed_bf16(const unsigned char* w, int n, int k);
std::vector<float> unpack_transposed_bf16(const std::uint16_t* packed, int n, int k);

// Which tiles a product runs in. Widest: the AVX-512 ones where the CPU has AVX-512F and the
// backend allows them, else AVX2. Attention (q·kᵀ and weights · v, 64 to 256 deep): the same,
// unless the record says these short products ran faster in the AVX2 tiles on this CPU
// (KernelTuning::attn_avx2: a CPU that runs AVX-512 as two 256-bit halves). Same bits either way.
enum class Tiles { Widest, Attention };

// c (m, n; row stride ldc) = a (m, k; row stride lda) · b + bias, where b is (k, n) given as
// pack_transposed panels and bias (n) may be null. Splits the panels over two threads
// when the product is large enough to pay for starting one.
void gemm_packed(int m, int n, int k, const float* a, std::int64_t lda, const float* packed, const float* bias,
                 float* c, std::int64_t ldc, Tiles tiles = Tiles::Widest);
// The same with pack_transposed_bf16 panels: rows of few products widen B in registers as
// they read it; longer products widen each panel once into a scratch buffer and run the
// float tiles over it. Same bits as gemm_packed on the widened panels.
void gemm_packed_bf16(int m, int n, int k, const float* a, std::int64_t lda, const std::uint16_t* packed,
                      const float* bias, float* c, std::int64_t ldc);

// gemm_packed with the sizes t (tuning.hpp) instead of the process's record: calibration.
struct KernelTuning;
void gemm_packed_tuned(const KernelTuning& t, int m, int n, int k, const float* a, std::int64_t lda,
                       const float* packed, const float* bias, float* c, std::int64_t ldc, Tiles tiles = Tiles::Widest);

// c (m, n; ldc) = a (m, k; lda) · b (k, n; ldb), both row-major, on the calling thread.
// lower: a is lower-triangular (row i is zero past column i), so row block [i, i + r)
// only reads columns [0, i + r) of a and rows [0, i + r) of b.
void gemm_rowmajor(int m, int n, int k, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                   std::int64_t ldc, bool lower, Tiles tiles = Tiles::Widest);

}  // namespace mhaviz::detail
