#!/usr/bin/env python3
"""Save a trained GPT in the form mhaviz loads: a folder with model.safetensors and config.json
(put GPT-2's vocab.json and merges.txt beside them). Needs PyTorch only (no safetensors or
transformers package); the safetensors file is written here with struct and json.

In a notebook, with the book's GPTModel (chapters 4-5) and its config dict:

    import sys; sys.path.insert(0, "/path/to/mhaviz/scripts")
    from export_for_mhaviz import export_book, export_hf
    export_book(model, GPT_CONFIG_124M, "my-gpt")          # -> my-gpt/model.safetensors, config.json

With a Hugging Face GPT2LMHeadModel (or its state_dict and config dict):

    export_hf(hf_model, "gpt2-mhaviz")

A chapter-3 attention module (MultiHeadAttention, MultiHeadAttentionWrapper, or a module with
the Transformer tutorial's qkv_layer and linear_layer) that you trained, for a session file's
"model": {"weights": "trained.safetensors", ...}:

    from export_for_mhaviz import export_attention
    export_attention(mha, "trained.safetensors")

From the command line, with a state_dict saved by torch.save and the config as JSON:

    python3 export_for_mhaviz.py model.pth config.json OUT_DIR [--dtype f32|f16|bf16]

The layout (book or Hugging Face) is read off the state_dict's names. Tensors are saved as
they are (float32 unless --dtype asks otherwise); mhaviz computes in float32 either way.
"""
import argparse
import json
import os
import struct
import sys

import torch

_DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.bool: "BOOL", torch.uint8: "U8"}
_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
BOOK_KEYS = ("vocab_size", "context_length", "emb_dim", "n_heads", "n_layers", "drop_rate", "qkv_bias")
HF_KEYS = ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "layer_norm_epsilon")


def _atomic_write(path, write):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def save_safetensors(tensors, path, metadata=None):
    """tensors: {name: torch.Tensor (float32, float16, bfloat16; bool and uint8 for mask buffers)},
    written in the given order, atomically."""
    header, offset, parts = {}, 0, []
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        if t.dtype not in _DTYPE_NAMES:
            raise ValueError(f"{name}: dtype {t.dtype} is not float32, float16 or bfloat16")
        # A uint8 view gives the raw little-endian bytes for every dtype, bfloat16 included.
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        parts.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # the data starts 8-byte aligned, as the reference writer does

    def write(f):
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in parts:
            f.write(raw)

    _atomic_write(path, write)


def load_safetensors(path):
    """{name: torch.Tensor} of a safetensors file of F32, F16 or BF16 tensors, in the order of their
    bytes in the file (a writer's header may list them in another order: JSON objects are
    unordered); the reader of save_safetensors."""
    dtypes = {v: k for k, v in _DTYPE_NAMES.items()}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    tensors = [(name, t) for name, t in header.items() if name != "__metadata__"]
    for name, t in sorted(tensors, key=lambda item: item[1]["data_offsets"][0]):
        b, e = t["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[b:e]), dtype=dtypes[t["dtype"]]).reshape(t["shape"])
    return out


def _write_config(config, out_dir):
    text = json.dumps(config, indent=2) + "\n"
    _atomic_write(os.path.join(out_dir, "config.json"), lambda f: f.write(text.encode()))


def _cast(state, dtype):
    return {k: (v.to(dtype) if dtype is not None else v) for k, v in state.items()}


def export_book(model_or_state_dict, config, out_dir, dtype=None):
    """The book's GPTModel: tok_emb, pos_emb, trf_blocks.N.att.W_query ..., out_head."""
    state = model_or_state_dict.state_dict() if hasattr(model_or_state_dict, "state_dict") else model_or_state_dict
    missing = [k for k in BOOK_KEYS if k not in config and k != "drop_rate"]
    if missing:
        raise ValueError(f"config: missing {', '.join(missing)} (the book's GPT_CONFIG_124M keys)")
    if "tok_emb.weight" not in state:
        raise ValueError("state_dict has no tok_emb.weight: not the book's GPTModel (use export_hf for GPT-2)")
    os.makedirs(out_dir, exist_ok=True)
    # Buffers such as att.mask are rebuilt by mhaviz; only parameters are saved.
    kept = {k: v for k, v in state.items() if not k.endswith(".mask") and v.is_floating_point()}
    save_safetensors(_cast(kept, dtype), os.path.join(out_dir, "model.safetensors"), {"format": "pt"})
    _write_config({k: config[k] for k in BOOK_KEYS if k in config}, out_dir)


def export_hf(model_or_state_dict, out_dir, config=None, dtype=None):
    """A Hugging Face GPT2LMHeadModel or GPT2Model (config: its config.to_dict() when a state_dict is given)."""
    if hasattr(model_or_state_dict, "state_dict"):
        state = model_or_state_dict.state_dict()
        config = config or model_or_state_dict.config.to_dict()
    else:
        state = model_or_state_dict
    if config is None:
        raise ValueError("config: give the model's config dict (n_layer, n_head, n_embd, n_positions, vocab_size)")
    state = dict(state)
    wte = state.get("transformer.wte.weight", state.get("wte.weight"))
    if wte is None:
        raise ValueError("state_dict has no wte.weight: not GPT-2 (use export_book for the book's GPTModel)")
    head = state.get("lm_head.weight")
    if head is not None and (head.data_ptr() == wte.data_ptr() or torch.equal(head, wte)):
        del state["lm_head.weight"]  # tied: mhaviz multiplies by wte, as GPT-2 does
    kept = {k: v for k, v in state.items() if not k.endswith((".attn.bias", ".attn.masked_bias")) and v.is_floating_point()}
    os.makedirs(out_dir, exist_ok=True)
    save_safetensors(_cast(kept, dtype), os.path.join(out_dir, "model.safetensors"), {"format": "pt"})
    cfg = {k: config[k] for k in HF_KEYS if k in config}
    if "n_positions" not in cfg and "n_ctx" in config:
        cfg["n_positions"] = config["n_ctx"]
    _write_config(cfg, out_dir)


def export_attention(module_or_state_dict, path, dtype=None):
    """A chapter-3 attention module's parameters under their state_dict names (W_query.weight,
    heads.0.W_key.weight, out_proj.bias, qkv_layer.weight ...), the names `mhaviz dump` prints.
    The causal mask buffers are left out: mhaviz builds the mask from the session."""
    state = module_or_state_dict.state_dict() if hasattr(module_or_state_dict, "state_dict") else module_or_state_dict
    kept = {k: v for k, v in state.items() if k.split(".")[-1] != "mask" and v.is_floating_point()}
    if not kept:
        raise ValueError("state_dict has no floating-point parameters")
    save_safetensors(_cast(kept, dtype), path, {"format": "pt"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("state_dict", help="a .pth/.pt file saved with torch.save(model.state_dict(), ...)")
    ap.add_argument("config", help="the model's config as JSON (book keys or Hugging Face keys)")
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", choices=sorted(_TORCH_DTYPES), help="cast every tensor (default: keep)")
    a = ap.parse_args()
    state = torch.load(a.state_dict, map_location="cpu")
    if isinstance(state, dict) and "model_state_dict" in state:  # the book's chapter-5 checkpoints
        state = state["model_state_dict"]
    with open(a.config) as f:
        config = json.load(f)
    dtype = _TORCH_DTYPES.get(a.dtype) if a.dtype else None
    try:
        if "tok_emb.weight" in state:
            export_book(state, config, a.out_dir, dtype)
        else:
            export_hf(state, a.out_dir, config, dtype)
    except ValueError as e:
        print(f"export_for_mhaviz: {e}", file=sys.stderr)
        return 2
    print(f"wrote {a.out_dir}/model.safetensors and config.json; put GPT-2's vocab.json and merges.txt beside them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
