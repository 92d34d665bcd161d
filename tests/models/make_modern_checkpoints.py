#!/usr/bin/python3
"""Small Qwen3, Qwen2, Llama 3 and Gemma 3 checkpoints for the tests, in the Hugging Face layout,
each with the answer of a float64 reference forward (hf_reference.py, after the book's
standalone modules).

    make_modern_checkpoints.py OUT [--bad]   checkpoints in OUT (and broken inputs in OUT/bad)
    make_modern_checkpoints.py --check       the reference's invariants only (no files)
    make_modern_checkpoints.py --qwen3-0.6b DIR   a random Qwen3-0.6B-shaped F32 checkpoint (~2.4 GB)
    make_modern_checkpoints.py --qwen3-0.6b DIR --bf16   the same values rounded to BF16 (~1.2 GB)

OUT/manifest.json lists the checkpoints: name, model_type, dtype, sharded, tied, the tensor
names, the per-layer sliding flags. Each folder holds config.json and model.safetensors, or
model-0000K-of-0000N.safetensors shards with model.safetensors.index.json, plus reference/:
  input.json            {"sequences": [[ids], ...]}
  expected.safetensors  s{k}.layers.{L}.attn_weights (1, n_heads, T, T), s{k}.logits_last (vocab),
                        s{k}.layers.{L}.attn_in / attn_out (1, T, hidden): the attention sublayer's
                        input (the input norm's output) and output (before the residual),
                        rope_global.inv_freq / rope_local.inv_freq (head_dim/2); F32 of float64 values
  weights_f32.safetensors  every tensor as the checkpoint stores it, widened to F32
The reference runs on the stored values (BF16 or F16 rounded), in float64. OUT/bad/manifest.json lists
broken inputs, each with the stage that must refuse it ("config", "weights", "tokenizer") and a
substring of the one-line error. A second run with the same script and OUT does nothing.

Cross-checks run every time (and alone with --check): RoPE at position 0 is the identity; a
model with as many K/V heads as query heads equals plain multi-head attention computed without
repeat_interleave; a Gemma sliding layer equals a full one when T <= window; the llama3
frequency scaling keeps short wavelengths and divides long ones. transformers is not on this
machine, so there is no second implementation to compare with.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from export_for_mhaviz import save_safetensors  # noqa: E402
from hf_reference import DecoderModel, arch_of, hf_names, inv_freq, load_hf_state, rope_tables, apply_rope  # noqa: E402

VOCAB = 300
SEQUENCES = [[5, 17, 230, 17, 99, 5, 42], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 250, 7], [299]]


# [SECTION] the checkpoints: config.json of each, small shapes

def base(model_type, **extra):
    c = {"model_type": model_type, "architectures": [], "hidden_size": 64, "num_hidden_layers": 3,
         "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": VOCAB,
         "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "torch_dtype": "float32"}
    c.update(extra)
    return c


CHECKPOINTS = [
    # Qwen3: head_dim 32 given (not hidden / heads = 16), QK-norm, tied, one file.
    dict(name="qwen3_f32", dtype="F32", shards=1, seed=11,
         config=base("qwen3", architectures=["Qwen3ForCausalLM"], head_dim=32, rope_theta=1000000.0,
                     tie_word_embeddings=True, attention_bias=False, use_sliding_window=False, sliding_window=None)),
    dict(name="qwen3_bf16_sharded", dtype="BF16", shards=3, seed=12,
         config=base("qwen3", architectures=["Qwen3ForCausalLM"], head_dim=16, rope_theta=10000.0,
                     tie_word_embeddings=False, torch_dtype="bfloat16")),
    # Qwen2: q/k/v biases, head_dim = hidden / heads, untied.
    dict(name="qwen2_bias", dtype="F32", shards=2, seed=13,
         config=base("qwen2", architectures=["Qwen2ForCausalLM"], rope_theta=1000000.0, tie_word_embeddings=False)),
    # Llama 3.2-style: llama3 frequency scaling (all three regions at head_dim 16), tied, BF16 shards.
    dict(name="llama3_bf16_sharded", dtype="BF16", shards=2, seed=14,
         config=base("llama", architectures=["LlamaForCausalLM"], rope_theta=500000.0, rms_norm_eps=1e-5,
                     tie_word_embeddings=True, torch_dtype="bfloat16", head_dim=16,
                     rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                     bos_token_id=128000, eos_token_id=[128001, 128008, 128009])),
    # SmolLM2-style Llama: plain RoPE, as many K/V heads as query heads (MHA), untied, F32.
    dict(name="llama_mha_f32", dtype="F32", shards=1, seed=15,
         config=base("llama", architectures=["LlamaForCausalLM"], num_key_value_heads=4, rope_theta=100000.0,
                     rms_norm_eps=1e-5, tie_word_embeddings=False, num_hidden_layers=2)),
    # Gemma 3: four norms, (1 + w), QK-norm, embedding x sqrt(64), query_pre_attn_scalar 24,
    # a 4-token window on layers 0 and 1 (sliding_window_pattern 3), local base 10000.
    dict(name="gemma3_f32", dtype="F32", shards=1, seed=16,
         config=base("gemma3_text", architectures=["Gemma3ForCausalLM"], head_dim=16, query_pre_attn_scalar=24,
                     sliding_window=4, sliding_window_pattern=3, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                     hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True, final_logit_softcapping=None,
                     attn_logit_softcapping=None, rope_scaling=None, bos_token_id=2, eos_token_id=1, pad_token_id=0)),
    # Llama with attention_bias (q/k/v/o biases), one K/V head for four, linear RoPE scaling,
    # stored as F16, untied.
    dict(name="llama_bias_f16", dtype="F16", shards=1, seed=18,
         config=base("llama", architectures=["LlamaForCausalLM"], num_key_value_heads=1, head_dim=32,
                     attention_bias=True, rope_theta=500000.0, rope_scaling={"factor": 4.0, "rope_type": "linear"},
                     tie_word_embeddings=False, torch_dtype="float16")),
    # Qwen2 with its sliding window switched on: layers from max_window_layers on slide (5 keys).
    dict(name="qwen2_sliding_f16", dtype="F16", shards=2, seed=19,
         config=base("qwen2", architectures=["Qwen2ForCausalLM"], use_sliding_window=True, sliding_window=5,
                     max_window_layers=1, rope_theta=1000000.0, tie_word_embeddings=True, torch_dtype="float16")),
    # Gemma 3 as transformers 4.53 saves it: layer_types, linear scaling on global layers, BF16 shards.
    dict(name="gemma3_bf16_sharded", dtype="BF16", shards=3, seed=17,
         config=base("gemma3_text", architectures=["Gemma3ForCausalLM"], head_dim=32, query_pre_attn_scalar=32,
                     num_hidden_layers=4, sliding_window=5,
                     layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                     rope_theta=1000000.0, rope_local_base_freq=10000.0, rope_scaling={"factor": 8.0, "rope_type": "linear"},
                     tie_word_embeddings=True, torch_dtype="bfloat16")),
]


# [SECTION] random weights in the Hugging Face layout

def random_state(config, seed):
    """{HF name: float32 tensor}, scaled so attention is far from uniform and norms matter."""
    a = arch_of(config)
    g = torch.Generator().manual_seed(seed)
    model = DecoderModel(config)
    state = {}
    for hf, mine in hf_names(a, config.get("tie_word_embeddings", a["gemma"])).items():
        shape = dict(model.named_parameters())[mine].shape
        if hf.endswith("norm.weight"):
            # Gemma stores w for (1 + w): around 0; the others around 1.
            t = (0.0 if a["gemma"] else 1.0) + 0.3 * torch.randn(shape, generator=g)
        elif hf.endswith(".bias"):
            t = 0.2 * torch.randn(shape, generator=g)
        elif "embed_tokens" in hf:
            t = torch.randn(shape, generator=g)
        else:
            gain = 2.0 if ("q_proj" in hf or "k_proj" in hf) else 1.0
            t = gain * torch.randn(shape, generator=g) / math.sqrt(shape[1])
        state[hf] = t
    return state


def rounded(state, dtype):
    """The values the file will hold, as float64."""
    return {k: v.to(dtype).to(torch.float64) for k, v in state.items()}


# [SECTION] the reference outputs

def reference(config, state64):
    model = load_hf_state(DecoderModel(config).double(), state64)
    out = {}
    with torch.no_grad():
        for k, ids in enumerate(SEQUENCES):
            logits, weights = model(torch.tensor([ids]))
            for i, w in enumerate(weights):
                out[f"s{k}.layers.{i}.attn_weights"] = w.to(torch.float32).contiguous()
                block = model.trf_blocks[i]
                out[f"s{k}.layers.{i}.attn_in"] = block.attn_in.to(torch.float32).contiguous()
                out[f"s{k}.layers.{i}.attn_out"] = block.attn_out.to(torch.float32).contiguous()
            out[f"s{k}.logits_last"] = logits[0, -1].to(torch.float32).contiguous()
    a = model.a
    out["rope_global.inv_freq"] = inv_freq(a["rope_global"], a["head_dim"]).to(torch.float32)
    out["rope_local.inv_freq"] = inv_freq(a["rope_local"], a["head_dim"]).to(torch.float32)
    return out


# [SECTION] invariants of the reference

def check_invariants():
    torch.manual_seed(0)
    # 1. RoPE at position 0 is the identity (cos 1, sin 0), at any base and scaling.
    for rope in ({"theta": 1e4, "type": "default"}, {"theta": 5e5, "type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}):
        cos, sin = rope_tables(rope, 16, 5, torch.float64)
        x = torch.randn(1, 2, 5, 16, dtype=torch.float64)
        assert torch.equal(apply_rope(x, cos, sin)[:, :, 0], x[:, :, 0]), "RoPE at position 0 is not the identity"
    # 2. llama3 scaling: the shortest wavelength kept, the longest divided by factor.
    rope = {"theta": 5e5, "type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}
    plain, scaled = inv_freq({"theta": 5e5, "type": "default"}, 16), inv_freq(rope, 16)
    assert scaled[0] == plain[0] and torch.isclose(scaled[-1], plain[-1] / 32), "llama3 scaling regions"
    assert plain[-1] / 32 < scaled[4] < plain[4], "llama3 scaling: no interpolated frequency at head_dim 16"
    # 3. One K/V head per query head is plain multi-head attention (no repeat_interleave).
    config = dict(CHECKPOINTS[4]["config"])
    model = load_hf_state(DecoderModel(config).double(), rounded(random_state(config, 5), torch.float32))
    ids = torch.tensor([SEQUENCES[1]])
    with torch.no_grad():
        x = model.tok_emb(ids)
        block = model.trf_blocks[0]
        h = block.norm1(x)
        att = block.att
        cos, sin = rope_tables(model.a["rope_global"], model.a["head_dim"], ids.shape[1], torch.float64)
        mask = torch.triu(torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool), diagonal=1)
        _, w = att(h, mask, cos, sin)
        T, H, hd = ids.shape[1], att.H, att.hd
        q = apply_rope(att.W_query(h).view(1, T, H, hd).transpose(1, 2), cos, sin)
        k = apply_rope(att.W_key(h).view(1, T, H, hd).transpose(1, 2), cos, sin)
        mha = torch.softmax((q @ k.transpose(2, 3) / math.sqrt(hd)).masked_fill(mask, -torch.inf), dim=-1)
        assert torch.allclose(w, mha, rtol=0, atol=1e-12), "GQA with group 1 differs from MHA"
    # 4. Gemma: a sliding layer equals a full one when T <= window.
    config = dict(CHECKPOINTS[5]["config"], sliding_window=64)
    state = rounded(random_state(config, 6), torch.float32)
    full_config = dict(config, sliding_window_pattern=1)  # every layer full
    with torch.no_grad():
        ids = torch.tensor([SEQUENCES[1]])
        sliding_model = load_hf_state(DecoderModel(config).double(), state)
        assert any(sliding_model.a["sliding"])
        ls, ws = sliding_model(ids)
        local_config = dict(full_config, rope_local_base_freq=config["rope_theta"])
        lf, wf = load_hf_state(DecoderModel(local_config).double(), state)(ids)
        ls2, _ = load_hf_state(DecoderModel(dict(config, rope_local_base_freq=config["rope_theta"])).double(), state)(ids)
        assert torch.allclose(ls2, lf, rtol=0, atol=1e-10), "a sliding layer within its window differs from a full one"
        assert not torch.allclose(ls, lf), "the local RoPE base changed nothing"
    print("invariants: RoPE(0) = identity, llama3 scaling regions, GQA(group 1) = MHA, sliding = full within the window")


# [SECTION] writing checkpoints

def shard_names(n):
    return [f"model-{k + 1:05d}-of-{n:05d}.safetensors" for k in range(n)]


def write_weights(folder, state, dtype, shards):
    """One file, or `shards` files split in order by size with their index."""
    stored = {k: v.to(dtype).contiguous() for k, v in state.items()}
    if shards == 1:
        save_safetensors(stored, os.path.join(folder, "model.safetensors"), {"format": "pt"})
        return
    total = sum(v.numel() * v.element_size() for v in stored.values())
    names, groups, size = shard_names(shards), [dict() for _ in range(shards)], 0
    for k, v in stored.items():
        groups[min(shards - 1, size * shards // total)][k] = v
        size += v.numel() * v.element_size()
    weight_map = {}
    for name, group in zip(names, groups):
        save_safetensors(group, os.path.join(folder, name), {"format": "pt"})
        weight_map.update({k: name for k in group})
    write_json(os.path.join(folder, "model.safetensors.index.json"), {"metadata": {"total_size": total}, "weight_map": weight_map})


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def write_checkpoint(out, spec):
    folder = os.path.join(out, spec["name"])
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "reference"))
    config = spec["config"]
    dtype = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[spec["dtype"]]
    state = random_state(config, spec["seed"])
    write_weights(folder, state, dtype, spec["shards"])
    write_json(os.path.join(folder, "config.json"), config)
    state64 = rounded(state, dtype)
    save_safetensors(reference(config, state64), os.path.join(folder, "reference", "expected.safetensors"))
    save_safetensors({k: v.to(torch.float32) for k, v in state64.items()}, os.path.join(folder, "reference", "weights_f32.safetensors"))
    write_json(os.path.join(folder, "reference", "input.json"), {"sequences": SEQUENCES})
    a = arch_of(config)
    return {"name": spec["name"], "path": spec["name"], "model_type": config["model_type"], "dtype": spec["dtype"],
            "sharded": spec["shards"] > 1, "tied": "lm_head.weight" not in state, "tensors": list(state),
            "sliding": a["sliding"], "window": a["window"], "head_dim": a["head_dim"], "n_heads": a["n_heads"],
            "n_kv_heads": a["n_kv_heads"], "n_layers": a["n_layers"], "scaling": a["scaling"]}


# [SECTION] broken inputs

def write_bad(out):
    """One folder per refusal: a copy of a good sharded checkpoint broken in one way."""
    bad = os.path.join(out, "bad")
    shutil.rmtree(bad, ignore_errors=True)
    os.makedirs(bad)
    good = os.path.join(out, "qwen3_bf16_sharded")
    with open(os.path.join(good, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(good, "model.safetensors.index.json")) as f:
        index = json.load(f)
    shards = shard_names(3)
    cases = []

    def case(name, stage, error, config_change=None, config_text=None, index_change=None, files=None):
        folder = os.path.join(bad, name)
        shutil.copytree(good, folder, ignore=shutil.ignore_patterns("reference"))
        if config_change is not None or config_text is not None:
            c = json.loads(json.dumps(config))
            if config_change:
                config_change(c)
            with open(os.path.join(folder, "config.json"), "w") as f:
                f.write(config_text if config_text is not None else json.dumps(c, indent=2))
        if index_change is not None:
            i = json.loads(json.dumps(index))
            text = index_change(i)
            with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
                f.write(text if isinstance(text, str) else json.dumps(i, indent=2))
        if files:
            files(folder)
        cases.append({"name": name, "path": name, "stage": stage, "error": error})

    # config.json
    case("config_unknown_model_type", "config", 'model_type "bert" is not supported (supported: qwen3, qwen2, llama, gemma3_text, gemma3)',
         config_change=lambda c: c.update(model_type="bert"))
    case("config_missing_hidden_size", "config", "hidden_size is missing", config_change=lambda c: c.pop("hidden_size"))
    case("config_wrong_type", "config", 'num_hidden_layers is "three", not an integer',
         config_change=lambda c: c.update(num_hidden_layers="three"))
    case("config_heads_not_divisible", "config", "num_attention_heads 4 is not a multiple of num_key_value_heads 3",
         config_change=lambda c: c.update(num_key_value_heads=3))
    case("config_odd_head_dim", "config", "head_dim 15 is odd", config_change=lambda c: c.update(head_dim=15))
    case("config_rope_yarn", "config", 'rope_scaling.rope_type "yarn" is not supported',
         config_change=lambda c: c.update(rope_scaling={"rope_type": "yarn", "factor": 4.0}))
    case("config_llama3_incomplete", "config", "rope_scaling.low_freq_factor is missing",
         config_change=lambda c: c.update(rope_scaling={"rope_type": "llama3", "factor": 8.0}))
    case("config_softcapping", "config", "final_logit_softcapping is 30.0: softcapping is not supported",
         config_change=lambda c: c.update(final_logit_softcapping=30.0))
    case("config_layer_types_short", "config", "layer_types is not a list of num_hidden_layers (3) entries",
         config_change=lambda c: c.update(layer_types=["full_attention"]))
    case("config_corrupt", "config", "not valid JSON", config_text='{"model_type": "qwen3", ')
    # shards and their index
    case("shard_missing", "weights", f'shard "{shards[1]}"', files=lambda d: os.remove(os.path.join(d, shards[1])))
    case("index_outside_folder", "weights", "points outside the folder",
         index_change=lambda i: i["weight_map"].update({"model.norm.weight": "../" + shards[2]}))
    case("index_wrong_shard", "weights", "which does not hold it",
         index_change=lambda i: i["weight_map"].update({"model.norm.weight": shards[0]}))
    case("index_unnamed_tensor", "weights", "which model.safetensors.index.json does not name",
         index_change=lambda i: i["weight_map"].pop("model.norm.weight") and None)
    case("index_corrupt", "weights", "not valid JSON", index_change=lambda i: '{"weight_map": {')

    def doubled(folder):  # shard 1 also holds a tensor of shard 3
        from make_checkpoints import read_raw, raw_safetensors  # noqa: E402 (the GPT-2 script's raw helpers)
        h1, d1 = read_raw(os.path.join(folder, shards[0]))
        h3, d3 = read_raw(os.path.join(folder, shards[2]))
        t = h3["model.norm.weight"]
        b, e = t["data_offsets"]
        h1["model.norm.weight"] = dict(t, data_offsets=[len(d1), len(d1) + e - b])
        raw_safetensors(os.path.join(folder, shards[0]), h1, d1 + d3[b:e])
    case("tensor_in_two_shards", "weights", '"model.norm.weight" is in two shards', files=doubled)
    case("no_weights", "weights", "no model.safetensors and no model.safetensors.index.json",
         files=lambda d: [os.remove(os.path.join(d, n)) for n in shards + ["model.safetensors.index.json"]])
    # tokenizer.json
    wordpiece = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None, "post_processor": None,
                 "decoder": None, "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}}}
    case("tokenizer_wordpiece", "tokenizer", 'model.type is "WordPiece": mhaviz reads BPE tokenizers only',
         files=lambda d: write_json(os.path.join(d, "tokenizer.json"), wordpiece))
    unigram = dict(wordpiece, model={"type": "Unigram", "vocab": [["a", 0.0]]})
    case("tokenizer_unigram", "tokenizer", 'model.type is "Unigram"', files=lambda d: write_json(os.path.join(d, "tokenizer.json"), unigram))
    metaspace = dict(wordpiece, pre_tokenizer={"type": "Metaspace", "replacement": "\u2581"},
                     model={"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})
    case("tokenizer_unknown_pre_tokenizer", "tokenizer", 'pre_tokenizer.type "Metaspace" is not supported (mhaviz reads Split, ByteLevel, Digits, Sequence)',
         files=lambda d: write_json(os.path.join(d, "tokenizer.json"), metaspace))

    def corrupt_tokenizer(d):
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            f.write('{"version": "1.0", "model": {"type": "BPE", "vocab": {')
    case("tokenizer_corrupt", "tokenizer", "not valid JSON", files=corrupt_tokenizer)
    write_json(os.path.join(bad, "manifest.json"), {"cases": cases})


# [SECTION] a Qwen3-0.6B-shaped checkpoint for the benchmark

QWEN3_06B = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "num_hidden_layers": 28,
             "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
             "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
             "tie_word_embeddings": True, "attention_bias": False, "hidden_act": "silu", "torch_dtype": "float32",
             "bos_token_id": 151643, "eos_token_id": 151645}


def write_qwen3_06b(folder, bf16=False):
    """Random weights (std 0.02, norms 1), F32, written tensor by tensor so memory stays low.
    bf16: the same values rounded to BF16 (torch's round to nearest even), as a checkpoint
    saved in bfloat16 holds them, config.json saying torch_dtype bfloat16."""
    os.makedirs(folder, exist_ok=True)
    a = arch_of(QWEN3_06B)
    E, H, K, hd, I, V = a["emb_dim"], a["n_heads"], a["n_kv_heads"], a["head_dim"], a["hidden_dim"], a["vocab_size"]
    shapes = {"model.embed_tokens.weight": [V, E]}
    for i in range(a["n_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": [E], p + "self_attn.q_proj.weight": [H * hd, E],
                       p + "self_attn.k_proj.weight": [K * hd, E], p + "self_attn.v_proj.weight": [K * hd, E],
                       p + "self_attn.o_proj.weight": [E, H * hd], p + "self_attn.q_norm.weight": [hd],
                       p + "self_attn.k_norm.weight": [hd], p + "post_attention_layernorm.weight": [E],
                       p + "mlp.gate_proj.weight": [I, E], p + "mlp.up_proj.weight": [I, E], p + "mlp.down_proj.weight": [E, I]})
    shapes["model.norm.weight"] = [E]
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    dtype, width = ("BF16", 2) if bf16 else ("F32", 4)
    for name, shape in shapes.items():
        n = width * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    g = torch.Generator().manual_seed(606)
    path = os.path.join(folder, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape in shapes.items():
            t = torch.ones(shape) if name.endswith("norm.weight") else 0.02 * torch.randn(shape, generator=g)
            f.write((t.to(torch.bfloat16).view(torch.int16) if bf16 else t).numpy().tobytes())
    os.replace(path + ".tmp", path)
    write_json(os.path.join(folder, "config.json"), dict(QWEN3_06B, torch_dtype="bfloat16") if bf16 else QWEN3_06B)
    print(f"{path}: {os.path.getsize(path) / 2**30:.2f} GiB")


def main():
    ap = argparse.ArgumentParser(description="small Qwen3/Qwen2/Llama/Gemma 3 checkpoints and their float64 reference outputs")
    ap.add_argument("out", nargs="?", help="output folder for the test checkpoints")
    ap.add_argument("--bad", action="store_true", help="also write the broken inputs in OUT/bad")
    ap.add_argument("--check", action="store_true", help="run the reference's invariants and exit")
    ap.add_argument("--qwen3-0.6b", dest="qwen3", metavar="DIR", help="write a random Qwen3-0.6B-shaped F32 checkpoint into DIR")
    ap.add_argument("--bf16", action="store_true", help="with --qwen3-0.6b: the same values rounded to BF16")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.check:
        check_invariants()
        return 0
    if a.bf16 and not a.qwen3:
        ap.error("--bf16: only with --qwen3-0.6b DIR")
    if a.qwen3:
        write_qwen3_06b(a.qwen3, a.bf16)
    if not a.out:
        if not a.qwen3:
            ap.error("give OUT, --check or --qwen3-0.6b DIR")
        return 0
    os.makedirs(a.out, exist_ok=True)
    # The checkpoints depend on this script and the reference only: skip when they are unchanged.
    digest = hashlib.sha256()
    for f in (__file__, os.path.join(HERE, "hf_reference.py"), os.path.join(HERE, "..", "..", "scripts", "export_for_mhaviz.py")):
        with open(f, "rb") as fh:
            digest.update(fh.read())
    digest.update(str(a.bad).encode())
    stamp = os.path.join(a.out, "stamp")
    if os.path.exists(stamp) and open(stamp).read() == digest.hexdigest():
        return 0
    check_invariants()
    entries = [write_checkpoint(a.out, spec) for spec in CHECKPOINTS]
    write_json(os.path.join(a.out, "manifest.json"), {"checkpoints": entries, "sequences": SEQUENCES})
    if a.bad:
        write_bad(a.out)
    with open(stamp, "w") as f:
        f.write(digest.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
