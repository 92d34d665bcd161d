// The trainer's operations, each backward beside its forward (llm.c's layout), on raw
// row-major buffers. N rows (B·T positions), C = emb_dim, H heads of hd, V vocabulary.
// `kernel`: the products run in the project's GEMM (gemm.hpp, AVX-512 or AVX2 tiles); false:
// Eigen on OpenBLAS. Loops over rows are split over the thread pool (parallel.hpp).
// Backward functions overwrite their outputs (every parameter is used once per step) unless
// they say they accumulate.
#pragma once

#include <cstdint>
#include <vector>

namespace mhaviz::train::ops {

// [SECTION] encoder
// ids (N) in [0, V), position of row n = n % T -> out (N, C) = wte[id] + wpe[position].
void encoder_forward(float* out, const std::int32_t* ids, const float* wte, const float* wpe, std::int64_t N, int T,
                     int C);
// dout (N, C) -> dwte (V, C) and dwpe (T, C), zeroed first, then every row's gradient added.
void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* ids, std::int64_t N, int T,
                      int C, int V);

// [SECTION] layernorm (the book's: biased variance, eps 1e-5)
// inp (N, C) -> out (N, C) = scale · (inp − mean) / √(var + eps) + shift; mean, rstd (N).
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* scale, const float* shift,
                       std::int64_t N, int C);
// dout (N, C) -> dinp (N, C) accumulated (+=, the residual stream's gradient); dscale,
// dshift (C) overwritten.
void layernorm_backward(float* dinp, float* dscale, float* dshift, const float* dout, const float* inp,
                        const float* scale, const float* mean, const float* rstd, std::int64_t N, int C);

// [SECTION] matmul: nn.Linear
// inp (N, IC), weight (OC, IC), bias (OC) or null -> out (N, OC) = inp · weightᵀ + bias.
// pack: scratch for the weight's packed panels.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, std::int64_t N, int IC,
                    int OC, std::vector<float>& pack, bool kernel);
// dout (N, OC) -> dinp (N, IC) = dout · weight, dweight (OC, IC) = doutᵀ · inp, dbias (OC) =
// column sums of dout (when not null). trans: scratch for doutᵀ.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, std::int64_t N, int IC, int OC, std::vector<float>& trans, bool kernel);

// [SECTION] attention: the chapter-3 MultiHeadAttention between its projections
// qkv (B, T, 3C) [queries | keys | values; head h at columns h·hd of each] -> att (B, H, T, T)
// = softmax(q·kᵀ / √hd) under the causal mask (exact zeros above the diagonal), out (B, T, C)
// = att · v with the heads merged (transpose(1, 2) + view).
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int H, bool kernel);
// dout (B, T, C) -> dqkv (B, T, 3C).
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C, int H,
                        bool kernel);

// [SECTION] GELU, the book's tanh approximation
// inp (n) -> out (n) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
void gelu_forward(float* out, const float* inp, std::int64_t n);
// dout (n) -> dinp (n) = dout · GELU'(inp).
void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n);

// [SECTION] residual
// out (n) = a + b.
void residual_forward(float* out, const float* a, const float* b, std::int64_t n);
// acc (n) += x.
void accumulate(float* acc, const float* x, std::int64_t n);

// [SECTION] cross-entropy on next-token targets
// logits (N, V), targets (N) -> probs (N, V) = softmax rows, losses (N) = −log probs[target].
void crossentropy_forward(float* losses, float* probs, const float* logits, const std::int32_t* targets, std::int64_t N,
                          int V);
// -> dlogits (N, V) = (probs − onehot(target)) · dloss, the gradient of dloss · Σ losses.
void crossentropy_backward(float* dlogits, const float* probs, const std::int32_t* targets, float dloss, std::int64_t N,
                           int V);

}  // namespace mhaviz::train::ops
