// Today's open decoder models (Qwen3, Qwen2, Llama 2/3 and SmolLM2-style Llama, Gemma 3) from
// a Hugging Face folder, and their exact forward in float32: one model over the four
// architectures, whose differences are the flags of HfConfig (hf_config.hpp), not four copies.
//
// Per block, with C = hidden_size, H query heads, G K/V heads, hd = head_dim, I =
// intermediate_size, T tokens:
//   x = RMSNorm_in(resid)                                        (T, C)
//   q = x·Wqᵀ (+b), k = x·Wkᵀ (+b), v = x·Wvᵀ (+b)                (T, H·hd), (T, G·hd) ×2
//   QK-norm: RMSNorm over hd of every q and k head               (Qwen3, Gemma 3)
//   RoPE on q and k, split halves, the layer's frequencies       (Gemma 3: local base on sliding layers)
//   attention: query head h reads K/V head h / (H / G), causal, the sliding window on the
//     layers the config marks, scores / √hd (Gemma: · query_pre_attn_scalar^−0.5)
//   a = context·Woᵀ (+b); resid += a                             (Gemma: resid += RMSNorm_post_attn(a))
//   m = down(act(gate(n)) ⊙ up(n)), n = RMSNorm_2(resid)          (act: SiLU, or Gemma's tanh GELU)
//   resid += m                                                   (Gemma: resid += RMSNorm_post_ff(m))
// then the final RMSNorm and the LM head (tied to the embedding or not). Gemma's RMSNorm
// multiplies by (1 + w) and its embedding is scaled by √C (as float(√C), as the reference
// forward and the book's Gemma3Model do; transformers rounds it to the weights' dtype).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "mhaviz/attention_mask.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/hf_config.hpp"
#include "mhaviz/key_panels.hpp"
#include "mhaviz/linear.hpp"
#include "mhaviz/load_error.hpp"
#include "mhaviz/tensor.hpp"
#include "mhaviz/tokenizer.hpp"

namespace mhaviz {

struct HfBlock {
  Linear q, k, v, o;              // q [H·hd, C], k and v [G·hd, C], o [C, H·hd]; biases where the config says
  Linear gate, up, down;          // gate and up [I, C], down [C, I]
  std::vector<float> input_norm;  // (C) input_layernorm: before attention
  std::vector<float>
      post_attn_norm;  // (C) post_attention_layernorm: Llama/Qwen: before the MLP; Gemma: on attention's output
  std::vector<float> pre_ff_norm;     // (C) Gemma: pre_feedforward_layernorm; else empty
  std::vector<float> post_ff_norm;    // (C) Gemma: post_feedforward_layernorm; else empty
  std::vector<float> q_norm, k_norm;  // (hd) QK-norm; empty when the architecture has none
  bool sliding = false;               // a sliding-window layer (its mask and its RoPE frequencies)
};

struct HfModel {
  HfConfig config;
  // Unique per load_hf_model in this process: a trace names the model it came from by it (an
  // address may be reused by the next model loaded).
  std::uint64_t serial = 0;
  std::filesystem::path folder;
  // [V, C] model.embed_tokens.weight, widened to float32; empty when the head is tied and
  // packed for the kernel (the rows are read from lm_head's panels: the weights held once).
  std::vector<float> embed;
  std::vector<HfBlock> blocks;
  std::vector<float> final_norm;  // (C) model.norm.weight
  // Untied: lm_head.weight [V, C]. Tied: on the kernel the embedding packed (which the
  // lookup reads too; BF16 panels for a BF16 file, as every Linear of a BF16 checkpoint on
  // the kernel), on OpenBLAS nothing (the head multiplies by `embed`).
  Linear lm_head;
  bool tied = false;
  std::vector<double> inv_freq_global, inv_freq_local;  // (hd/2) RoPE of full and sliding layers

  std::int64_t parameter_count() const;
  // out (C) = row id of the embedding, wherever it is held.
  void embedding_row(int id, float* out) const;
  AttentionMask layer_mask(int layer) const;  // causal, with the window on sliding layers
};

// config.json and the weights of folder (model.safetensors, or shards and their index), each
// tensor checked against the shape the config gives and widened once to float32; Linears
// are packed for the kernel as they are read where the backend is not OpenBLAS (so the
// weights are held once, the file's pages given back as each tensor is consumed). Throws
// LoadError of one line: the config's problems (hf_config.hpp), the weights' (hf_weights.hpp),
// "FOLDER: no tensor "model.layers.0.self_attn.q_norm.weight"", "FOLDER: tensor
// "model.layers.1.mlp.up_proj.weight" is [96, 64], config.json gives [128, 64]".
HfModel load_hf_model(const std::filesystem::path& folder);

struct HfLayerTrace {
  AttentionMask mask;  // which keys each query saw: ask it, never the values
  // (1, T, C) the input norm's output, what the layer's attention reads (a layer opened as the
  // lesson's module takes it as X: hf_layer.hpp). T·C floats a layer, H·T/C times fewer than weights.
  Tensor x;
  Tensor weights;  // (1, H, T, T) softmax over the keys the mask shows; hidden cells exactly 0
  // (1, G, T, hd) keys after QK-norm and RoPE, and values: what a later forward's rows read
  // when it recomputes only the rows from the first changed token on.
  Tensor k, v;
  KeyPanels key_panels;  // k packed for the kernel: such a forward packs only the changed keys' panels
  // (1, H, T, hd) each query head's context, weights · v, before the heads are merged and
  // o_proj reads them: what ablation and head patching replace (hf_interventions.hpp).
  Tensor context;
  // (1, T, C) the residual stream after the block (Gemma: after its post-feedforward norm's
  // add): the next block's input, and what the logit lens and residual patching read.
  Tensor resid;
};

// Buffers of one forward's rows (T of each), kept in the trace so that a forward into the same
// trace reuses their memory instead of faulting in fresh pages.
// R = the rows a forward computes (T − recomputed_from).
struct HfScratch {
  std::vector<float> embedded, out;  // (R, C) the embeddings (layer 0's input), a sublayer's output
  std::vector<float> x;              // (R, C) the MLP's input norm
  std::vector<float> q, k, v;        // (R, H·hd), (R, G·hd) ×2 projected
  std::vector<float> qh;             // (1, H, T, hd) per head, rows from recomputed_from on
  std::vector<float> merged;         // (R, H·hd)
  std::vector<float> gate, up;       // (R, I)
};

struct HfTrace {
  std::vector<int> ids;              // T token ids
  std::vector<HfLayerTrace> layers;  // num_hidden_layers
  Tensor final_norm;                 // (1, T, C) the final RMSNorm: the LM head's input
  Tensor logits_last;                // (V) the LM head at position T − 1
  HfScratch scratch;
  // What the rows kept from the last forward were computed by: a forward recomputes from the
  // first token that differs only when both match (else from 0).
  std::uint64_t model_serial = 0;
  Backend backend = Backend::OpenBlas;
  int recomputed_from = 0;  // first row the last call computed (T: none, only the logits)
  int tokens() const { return static_cast<int>(ids.size()); }
};

// ids (T), 1 ≤ T ≤ max_position_embeddings (when the config gives it), each in [0, V) -> the
// trace. Products in the project's kernel (or OpenBLAS), element-wise stages over threads.
// Throws std::invalid_argument for bad ids.
HfTrace hf_forward(const HfModel& model, std::span<const int> ids);
// The same into tr, reusing its tensors' and scratch's memory, with the same bits as a fresh
// trace. When tr holds a forward of the same model on the same backend, rows before the first
// id that differs are kept (causal attention: they cannot change) and only the rows from it on
// are computed, against the keys and values tr keeps per layer: an edit at the last position
// multiplies one row by every weight. On OpenBLAS, whose products' bits depend on their shape,
// every row is computed again.
void hf_forward(const HfModel& model, std::span<const int> ids, HfTrace& tr);

// (V) logits at position pos of tr: the LM head applied to final_norm's row.
std::vector<float> hf_logits(const HfModel& model, const HfTrace& tr, int pos);

// A folder whose config.json names a model_type other than "gpt2", or that holds
// model.safetensors.index.json (load_gpt reads no shards): read by load_hf_model (which names
// the supported types when it is none of them), not by load_gpt.
bool is_hf_model_folder(const std::filesystem::path& path);

// `mhaviz dump --model` of these models:
// {"format": "mhaviz-hf-dump", "version": 1, "model": {path, model_type, architecture,
//  num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, hidden_size,
//  vocab_size, sliding_window, sliding_layers, tied, parameters}, "token_ids": [T],
//  "tokens": [T display strings], "next_token": {"position": T - 1, "top": [{"id", "token",
//  "p"} x top_k]}, "tensors": {"layers.{L}.attn_weights": (1, H, T, T), "logits_last": (V)}}
// With `ablation` (trace is that ablated run, `mhaviz dump --ablate`) the header also holds
// "ablation": {"heads": ["L.H", ...], "mode": "zero" | "mean"}, as a GPT's dump.
template <class Trace>
struct InterventionOn;
using HfIntervention = InterventionOn<HfTrace>;
std::string hf_dump_json(const HfModel& model, const Tokenizer& tokenizer, const HfTrace& trace, int top_k = 5,
                         const HfIntervention* ablation = nullptr);

// Multiply-adds × 2 of a forward computing rows [from, T) of T tokens (a sliding layer's
// rows over the keys of their window) plus the LM head at the last row.
double hf_forward_flops(const HfConfig& c, int T, int from = 0);

// Bytes of the weights a forward of one row reads whole, as held (BF16 panels at two bytes a
// weight): every block's, the final norm's and the LM head's (a tied head's panels, which are
// also the embeddings). Of an untied model's embedding table it reads one row: not counted.
std::int64_t hf_weight_bytes(const HfModel& model);
// Reads each of those bytes once, on the forward's threads, and returns their sum as 64-bit
// words (so that the reads are made): its time is the floor of an edit at the last position.
std::uint64_t hf_read_weights(const HfModel& model);

}  // namespace mhaviz
