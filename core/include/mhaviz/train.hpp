// Training the book's GPTModel family from scratch in float32, step for step as PyTorch 1.13
// trains it: parameters initialised from the seed as torch initialises the modules after
// torch.manual_seed(seed), the forward, the backward of the mean next-token cross-entropy, and
// torch.optim.AdamW(model.parameters(), lr, betas=(0.9, 0.999), eps=1e-8, weight_decay).
//
// Two families, named as the book names their parameters (model.parameters() order):
//   full       the book's GPTModel (chapter 4): x = tok_emb[id] + pos_emb[t]; per block
//              x += att(norm1(x)); x += ff(norm2(x)); logits = out_head(final_norm(x))
//   attn_only  the classic induction-head experiment: x = tok_emb[id] + pos_emb[t]; per block
//              x += att(x); logits = out_head(x)  (no LayerNorm, no MLP, no final norm)
// att is chapter 3's MultiHeadAttention (W_query, W_key, W_value, causal mask,
// softmax(q·kᵀ / √hd), out_proj with bias); ff is Linear(C, 4C) → GELU (tanh) → Linear(4C, C);
// LayerNorm has a biased variance and eps 1e-5; out_head has no bias. Dropout is 0: the
// trainer has none (the exactness target is torch with dropout 0).
//
// Sizes: B sequences of T tokens, C = emb_dim, H = n_heads, hd = C / H, V = vocab_size,
// L = n_layers, N = B·T rows.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mhaviz::train {

// A bad setting or input: one line naming the `mhaviz train` option (or file) and the value.
class TrainError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GptTrainConfig {
  int vocab_size = 64;
  int context_length = 32;  // T: pos_emb's rows, and the length of every training sequence
  int emb_dim = 64;
  int n_heads = 4;
  int n_layers = 2;
  bool attn_only = true;
  bool qkv_bias = false;
  int head_dim() const { return emb_dim / n_heads; }
};

// Throws TrainError naming the option ("--heads: 5 does not divide --d-model 64").
void validate_config(const GptTrainConfig& c);

// One parameter tensor of the flat buffer.
struct ParamTensor {
  std::string name;                 // state_dict name: "trf_blocks.0.att.W_query.weight"
  std::vector<std::int64_t> shape;  // nn.Linear weights [out, in]
  std::int64_t offset = 0;          // first value in the flat buffer
  std::int64_t numel() const;
};

// Every parameter in model.parameters() order (the order torch registers, initialises and
// hands them to AdamW): tok_emb, pos_emb, per block att.W_query/W_key/W_value (weight, bias
// when qkv_bias), att.out_proj, then in the full family ff.layers.0/2, norm1, norm2; then
// final_norm (full) and out_head. Offsets are contiguous from 0.
std::vector<ParamTensor> parameter_layout(const GptTrainConfig& c);

struct GptTrainModel {
  GptTrainConfig config;
  std::vector<ParamTensor> layout;
  std::vector<float> params;  // every parameter, flat, in layout order

  const ParamTensor& tensor(std::string_view name) const;  // throws std::out_of_range
  std::span<const float> values(std::string_view name) const;
  std::span<float> values(std::string_view name);
  std::int64_t parameter_count() const { return static_cast<std::int64_t>(params.size()); }
};

// Parameters as PyTorch initialises GPTModel(cfg) after torch.manual_seed(seed) (the low 32
// bits seed the generator, as torch does): construction order tok_emb, pos_emb, then each
// block's att (and ff), then out_head; nn.Embedding by normal_(0, 1) (train_random.hpp),
// nn.Linear by kaiming_uniform_(a=√5) and its bias by uniform_(±1/√fan_in), LayerNorm scale 1
// and shift 0. Bit for bit torch's, on a CPU where torch runs its AVX2 kernels.
// Precondition: validate_config(c).
GptTrainModel init_model(const GptTrainConfig& c, std::uint64_t seed);

// Every activation of a forward over B sequences, kept for the backward and for the head
// detectors; buffers keep their capacity between steps.
struct Activations {
  int B = 0, T = 0;
  std::vector<std::int32_t> inputs, targets;  // (B, T) each: tokens[:, :-1] and tokens[:, 1:]
  struct Layer {
    std::vector<float> ln1, ln1_mean, ln1_rstd;  // full: (N, C), (N), (N); norm1's output
    std::vector<float> qkv;                      // (N, 3C): queries | keys | values, head h at
                                                 // columns [h·hd, (h + 1)·hd) of each third
    std::vector<float> att;                      // (B, H, T, T) softmax weights, 0 above the diagonal
    std::vector<float> merged;                   // (N, C) context, heads merged: out_proj's input
    std::vector<float> mid;                      // full: (N, C) residual after the attention
    std::vector<float> ln2, ln2_mean, ln2_rstd;  // full: norm2's output and statistics
    std::vector<float> fc, gelu;                 // full: (N, 4C) ff.layers.0's output, GELU of it
  };
  std::vector<std::vector<float>> resid;       // L + 1 of (N, C): resid[0] the embeddings,
                                               // resid[l + 1] block l's output
  std::vector<Layer> layers;                   // L
  std::vector<float> lnf, lnf_mean, lnf_rstd;  // full: final_norm's output (N, C) and statistics
  std::vector<float> logits;                   // (N, V); the backward turns it into ∂loss/∂logits
  std::vector<float> probs;                    // (N, V) softmax of the logits
  std::vector<float> losses;                   // (N) cross-entropy of each position
  // Scratch: a projection's output (N, C); the gradient of the residual stream (N, C), of a
  // stage's output or input (N, 4C at most), of qkv (N, 3C); stacked Q/K/V weights and biases
  // (with qkv_bias); the kernels' packed and transposed operands.
  std::vector<float> proj, dresid, dstage, dinput, dqkv, stacked, pack, trans;
};

// tokens: (B, T + 1) ids in [0, V), T = context_length; inputs are tokens[:, :-1], targets
// tokens[:, 1:]. Returns the mean cross-entropy over the B·T positions; acts holds every
// activation. Products run on backend() (the project's kernels, or Eigen on OpenBLAS).
double forward(const GptTrainModel& m, std::span<const std::int32_t> tokens, int B, Activations& acts);

// After forward on the same model: grads (parameter_count()) = ∂loss/∂params, overwritten, in
// layout order, where the loss is the sum of this batch's position losses divided by
// `positions` (0: this batch's B·T, its mean; a shard of a larger batch passes the batch's).
void backward(const GptTrainModel& m, Activations& acts, std::span<float> grads, std::int64_t positions = 0);

// A training step's workspace: the batch in two shards, the first ⌈B/2⌉ sequences and the rest,
// each run end to end (forward and backward) on its own thread of the pool, so a step waits
// for the other thread once, not at every operation (on a machine shared with other work, a
// thread that is not running held up every one of some thirty joins). The shards' gradients
// are added in shard order: a step has the same bits on one core or many.
struct StepWorkspace {
  Activations shards[2];
  std::vector<float> shard_grads;  // the second shard's gradients
  std::vector<float> losses;       // (B·T) every position's loss, in batch order
};
// tokens (B, T + 1) -> the mean cross-entropy over the B·T positions; grads = ∂loss/∂params.
double loss_and_gradients(const GptTrainModel& m, std::span<const std::int32_t> tokens, int B, StepWorkspace& ws,
                          std::span<float> grads);

// The oracle: the same loss and gradients as plain loops accumulating in double, slow on
// purpose (tests). grads, when not null, is resized to parameter_count().
double loss_and_grads_reference(const GptTrainModel& m, std::span<const std::int32_t> tokens, int B,
                                std::vector<double>* grads);

// torch.optim.AdamW's update, per element in float32 with torch's operation order:
//   p *= 1 - lr·wd;  m = m·β1 + (1 − β1)·g;  v = v·β2 + (1 − β2)·g²;
//   p += −(lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + eps)
// with the scalars computed in double and rounded to float as torch's kernels take them.
// Weight decay applies to every parameter, as with AdamW(model.parameters()).
struct AdamW {
  double lr = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.1;
  std::int64_t step = 0;                   // updates done (torch's state["step"])
  std::vector<float> exp_avg, exp_avg_sq;  // torch's state["exp_avg"], ["exp_avg_sq"], flat
  void update(std::span<float> params, std::span<const float> grads);
};

}  // namespace mhaviz::train
