// A trained GPT: Hugging Face GPT-2 (gpt2 … gpt2-xl, distilgpt2, fine-tunes) or the book's
// GPTModel (chapters 4–5), loaded from safetensors into one float32 form. The forward
// (gpt_forward.hpp) reads only this struct, so both layouts run the same code.
//
// Orientation: every Linear is nn.Linear's, weight [out, in] row-major, whatever the file
// held (GPT-2's Conv1D stores [in, out] and is transposed when loaded).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "mhaviz/linear.hpp"
#include "mhaviz/load_error.hpp"

namespace mhaviz {

enum class GptLayout { HuggingFace, Book };

struct GptConfig {
  int n_layer = 0;
  int n_head = 0;
  int n_embd = 0;
  int n_ctx = 0;  // n_positions (Hugging Face) or context_length (book)
  int vocab_size = 0;
  float layer_norm_eps = 1e-5f;
  bool qkv_bias = true;  // Hugging Face GPT-2 always; the book's qkv_bias key otherwise
  // The attention-only family `mhaviz train --attn-only` makes (config.json "attn_only"):
  // each block only h += att(h), no LayerNorm, no MLP, no final norm.
  bool attn_only = false;
  int head_dim() const { return n_embd / n_head; }
};

// Attention-only blocks hold only qkv and proj; the norms and the MLP are empty.
struct GptBlock {
  std::vector<float> ln1_weight, ln1_bias;  // [n_embd] (book: norm1.scale / norm1.shift)
  // Q | K | V stacked row-wise: [3 * n_embd, n_embd]; inside each of the three blocks head h
  // owns rows [h * head_dim, (h + 1) * head_dim). Bias [3 * n_embd], empty when !qkv_bias.
  // GPT-2's c_attn already has this order (its columns); the book's W_query, W_key, W_value
  // are stacked into it.
  Linear qkv;
  Linear proj;  // [n_embd, n_embd] c_proj / out_proj
  std::vector<float> ln2_weight, ln2_bias;
  Linear fc;       // [4 * n_embd, n_embd] mlp.c_fc / ff.layers.0
  Linear fc_proj;  // [n_embd, 4 * n_embd] mlp.c_proj / ff.layers.2
};

struct GptModel {
  GptConfig config;
  GptLayout layout = GptLayout::HuggingFace;
  std::filesystem::path weights_file;       // the .safetensors file it came from
  std::filesystem::path folder;             // where config.json and the tokenizer files are
  std::vector<float> wte;                   // [vocab_size, n_embd]
  std::vector<float> wpe;                   // [n_ctx, n_embd]
  std::vector<GptBlock> blocks;             // n_layer
  std::vector<float> lnf_weight, lnf_bias;  // [n_embd]
  // [vocab_size, n_embd], no bias. Empty weight when the head is tied to wte (GPT-2 without
  // lm_head.weight): the forward then multiplies by wte.
  Linear lm_head;
  // A tied head's wte as a Linear [vocab_size, n_embd] holding only the kernel's packed
  // panels, filled by prepare_gpt_forward (gpt_forward.hpp). That function may also replace
  // any Linear's weight by its packed copy: once a model is prepared, read weights through
  // gpt_forward.hpp's gpt_linear_weight, not .weight.
  Linear tied_packed;
  bool tied_head() const { return lm_head.weight.empty() && lm_head.packed.empty(); }
  std::int64_t parameter_count() const;
};

// path: a model folder (config.json, model.safetensors, tokenizer files) or a .safetensors
// file with config.json beside it. Detects the layout from the tensor names, converts
// F16/BF16 to float32, checks every shape against the config, and releases the file's
// pages as it goes. Throws LoadError: one line naming the file and the problem.
GptModel load_gpt(const std::filesystem::path& path);

// Told after each tensor is read: bytes read so far and the bytes the load reads in all (a
// last call has done == total). Return false to stop: load_gpt then throws LoadCancelled.
// Runs on the loading thread; an app loading off its UI thread reads the numbers from there.
using LoadProgress = std::function<bool(std::uint64_t done, std::uint64_t total)>;
class LoadCancelled : public LoadError {
 public:
  using LoadError::LoadError;
};
GptModel load_gpt(const std::filesystem::path& path, const LoadProgress& progress);

}  // namespace mhaviz
