#!/usr/bin/python3
"""Small GPT checkpoints for the tests, each with the answer PyTorch computes for it.

    make_checkpoints.py OUT [--bad]       good checkpoints in OUT (and the bad catalogue in OUT/bad)
    make_checkpoints.py --gpt2-small DIR  a random GPT-2-small-shaped checkpoint for benchmarks

OUT/manifest.json lists the good checkpoints; each folder holds model.safetensors,
config.json, a tiny byte-level tokenizer (vocab.json: GPT-2's 256 byte tokens, a few merges,
<|endoftext|> last; merges.txt) and reference/: input.json {"token_ids": [...]} and
expected.safetensors (layers.{L}.attn_weights (1, n_head, T, T), logits (T, vocab),
logits_last (vocab), all F32) from the plain-torch forward below, computed in float32 on the
weights as stored (F16/BF16 rounded). OUT/dtypes/all_halfs.safetensors holds every F16 and
BF16 bit pattern with torch's float32 conversion of each. OUT/bad/manifest.json lists broken
checkpoints, one folder each, with a substring the error must contain and the stage that
reports it ("load": load_gpt; "tokenizer": reading vocab.json/merges.txt).

Needs torch and the standard library (safetensors written with struct and json).
"""
import argparse
import json
import math
import os
import shutil
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from export_for_mhaviz import save_safetensors  # noqa: E402

MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("e", "r")]
TOKEN_IDS = [34, 71, 262, 258, 84, 255, 0, 260, 188, 72]  # T = 10, ids across the whole vocabulary


# [SECTION] tokenizer

def bytes_to_unicode():
    """GPT-2's byte -> printable character map, in its vocabulary order (ids 0..255)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def tiny_vocab():
    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode())}
    for a, b in MERGES:
        assert a in vocab and b in vocab
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return vocab


def write_tokenizer(folder):
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(tiny_vocab(), f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES))


VOCAB = len(tiny_vocab())  # 263


# [SECTION] weights in one canonical form (nn.Linear [out, in]) and the two layouts

def random_params(seed, E, n_layer, P, V, tied):
    g = torch.Generator().manual_seed(seed)

    def rn(*shape, std=0.2):
        return torch.randn(*shape, generator=g) * std

    p = {"wte": rn(V, E, std=0.5), "wpe": rn(P, E, std=0.3), "lnf_w": 1 + rn(E, std=0.1), "lnf_b": rn(E, std=0.1)}
    for i in range(n_layer):
        p.update({
            f"{i}.ln1_w": 1 + rn(E, std=0.1), f"{i}.ln1_b": rn(E, std=0.1),
            f"{i}.qkv_w": rn(3 * E, E, std=0.25), f"{i}.qkv_b": rn(3 * E, std=0.1),
            f"{i}.proj_w": rn(E, E), f"{i}.proj_b": rn(E, std=0.1),
            f"{i}.ln2_w": 1 + rn(E, std=0.1), f"{i}.ln2_b": rn(E, std=0.1),
            f"{i}.fc_w": rn(4 * E, E), f"{i}.fc_b": rn(4 * E, std=0.1),
            f"{i}.fcp_w": rn(E, 4 * E, std=0.1), f"{i}.fcp_b": rn(E, std=0.1),
        })
    if not tied:
        p["head"] = rn(V, E, std=0.5)
    return p


def hf_state(p, n_layer, prefix="", mask_buffers=False, P=0):
    """GPT-2's names; Conv1D weights [in, out] (the transpose of nn.Linear's)."""
    s = {prefix + "wte.weight": p["wte"], prefix + "wpe.weight": p["wpe"]}
    for i in range(n_layer):
        h = f"{prefix}h.{i}."
        s.update({
            h + "ln_1.weight": p[f"{i}.ln1_w"], h + "ln_1.bias": p[f"{i}.ln1_b"],
            h + "attn.c_attn.weight": p[f"{i}.qkv_w"].t(), h + "attn.c_attn.bias": p[f"{i}.qkv_b"],
            h + "attn.c_proj.weight": p[f"{i}.proj_w"].t(), h + "attn.c_proj.bias": p[f"{i}.proj_b"],
            h + "ln_2.weight": p[f"{i}.ln2_w"], h + "ln_2.bias": p[f"{i}.ln2_b"],
            h + "mlp.c_fc.weight": p[f"{i}.fc_w"].t(), h + "mlp.c_fc.bias": p[f"{i}.fc_b"],
            h + "mlp.c_proj.weight": p[f"{i}.fcp_w"].t(), h + "mlp.c_proj.bias": p[f"{i}.fcp_b"],
        })
        if mask_buffers:  # as older transformers saved them: a bool causal mask and a fill value
            s[h + "attn.bias"] = torch.tril(torch.ones(P, P, dtype=torch.bool)).view(1, 1, P, P)
            s[h + "attn.masked_bias"] = torch.tensor(-1e4)
    s[prefix + "ln_f.weight"] = p["lnf_w"]
    s[prefix + "ln_f.bias"] = p["lnf_b"]
    if "head" in p:
        s["lm_head.weight"] = p["head"]
    return s


def book_state(p, n_layer, qkv_bias):
    """The book's GPTModel names (nn.Linear [out, in]); the head is always saved (not tied)."""
    E = p["wte"].shape[1]
    s = {"tok_emb.weight": p["wte"], "pos_emb.weight": p["wpe"]}
    for i in range(n_layer):
        t = f"trf_blocks.{i}."
        w, b = p[f"{i}.qkv_w"], p[f"{i}.qkv_b"]
        for k, name in enumerate(("W_query", "W_key", "W_value")):
            s[f"{t}att.{name}.weight"] = w[k * E:(k + 1) * E]
            if qkv_bias:
                s[f"{t}att.{name}.bias"] = b[k * E:(k + 1) * E]
        s.update({
            t + "att.out_proj.weight": p[f"{i}.proj_w"], t + "att.out_proj.bias": p[f"{i}.proj_b"],
            t + "ff.layers.0.weight": p[f"{i}.fc_w"], t + "ff.layers.0.bias": p[f"{i}.fc_b"],
            t + "ff.layers.2.weight": p[f"{i}.fcp_w"], t + "ff.layers.2.bias": p[f"{i}.fcp_b"],
            t + "norm1.scale": p[f"{i}.ln1_w"], t + "norm1.shift": p[f"{i}.ln1_b"],
            t + "norm2.scale": p[f"{i}.ln2_w"], t + "norm2.shift": p[f"{i}.ln2_b"],
        })
    s["final_norm.scale"] = p["lnf_w"]
    s["final_norm.shift"] = p["lnf_b"]
    s["out_head.weight"] = p.get("head", p["wte"])
    return s


# [SECTION] the reference forward, plain torch, float32

def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)  # biased, as GPT-2 and the book
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def reference_forward(p, n_layer, n_head, eps, ids):
    """ids: T token ids. Returns [(1, n_head, T, T)] * n_layer attention weights, logits (T, V)."""
    T = len(ids)
    E = p["wte"].shape[1]
    hd = E // n_head
    x = p["wte"][ids] + p["wpe"][:T]  # (T, E)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = []
    for i in range(n_layer):
        a = layer_norm(x, p[f"{i}.ln1_w"], p[f"{i}.ln1_b"], eps)
        qkv = a @ p[f"{i}.qkv_w"].t() + p[f"{i}.qkv_b"]  # (T, 3E): Q | K | V
        q, k, v = (qkv[:, j * E:(j + 1) * E].view(T, n_head, hd).transpose(0, 1) for j in range(3))  # (H, T, hd)
        scores = q @ k.transpose(1, 2) / math.sqrt(hd)
        scores = scores.masked_fill(mask, float("-inf"))
        w = torch.softmax(scores, dim=-1)  # (H, T, T)
        weights.append(w.unsqueeze(0).contiguous())
        ctx = (w @ v).transpose(0, 1).reshape(T, E)
        x = x + ctx @ p[f"{i}.proj_w"].t() + p[f"{i}.proj_b"]
        m = layer_norm(x, p[f"{i}.ln2_w"], p[f"{i}.ln2_b"], eps)
        m = gelu_tanh(m @ p[f"{i}.fc_w"].t() + p[f"{i}.fc_b"])
        x = x + m @ p[f"{i}.fcp_w"].t() + p[f"{i}.fcp_b"]
    x = layer_norm(x, p["lnf_w"], p["lnf_b"], eps)
    logits = x @ p.get("head", p["wte"]).t()
    return weights, logits


# [SECTION] writing checkpoints

def write_checkpoint(out, spec):
    """spec: name, layout (hf/book), dtype, seed, E, H, L, P, eps, prefix, mask_buffers, tied, qkv_bias."""
    folder = os.path.join(out, spec["name"])
    os.makedirs(os.path.join(folder, "reference"), exist_ok=True)
    E, H, L, P = spec["E"], spec["H"], spec["L"], spec["P"]
    p = random_params(spec["seed"], E, L, P, VOCAB, spec["tied"])
    if spec["layout"] == "book" and not spec["qkv_bias"]:
        for i in range(L):
            p[f"{i}.qkv_b"] = torch.zeros(3 * E)
    dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[spec["dtype"]]
    # The reference runs on the values the file holds: rounded to the stored dtype, then float32.
    p = {k: v.to(dtype).to(torch.float32) for k, v in p.items()}
    if spec["layout"] == "hf":
        state = hf_state(p, L, spec["prefix"], spec["mask_buffers"], P)
        config = {"n_layer": L, "n_head": H, "n_embd": E, "n_positions": P, "vocab_size": VOCAB,
                  "layer_norm_epsilon": spec["eps"], "model_type": "gpt2"}
    else:
        state = book_state(p, L, spec["qkv_bias"])
        config = {"vocab_size": VOCAB, "context_length": P, "emb_dim": E, "n_heads": H, "n_layers": L,
                  "drop_rate": 0.1, "qkv_bias": spec["qkv_bias"]}
    state = {k: (v.to(dtype) if v.is_floating_point() and v.dim() > 0 else v) for k, v in state.items()}
    save_safetensors(state, os.path.join(folder, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer(folder)
    weights, logits = reference_forward(p, L, H, spec["eps"], TOKEN_IDS)
    expected = {f"layers.{i}.attn_weights": w for i, w in enumerate(weights)}
    expected["logits"] = logits.contiguous()
    expected["logits_last"] = logits[-1].contiguous()
    save_safetensors(expected, os.path.join(folder, "reference", "expected.safetensors"))
    with open(os.path.join(folder, "reference", "input.json"), "w") as f:
        json.dump({"token_ids": TOKEN_IDS}, f)
    return {**spec, "path": spec["name"], "vocab_size": VOCAB}


SMALL = dict(E=32, H=4, L=2, P=16, eps=1e-5, prefix="", mask_buffers=False, tied=True, qkv_bias=True)
CHECKPOINTS = [
    dict(SMALL, name="hf_f32", layout="hf", dtype="F32", seed=1),
    dict(SMALL, name="hf_f16", layout="hf", dtype="F16", seed=2, prefix="transformer."),
    dict(SMALL, name="hf_bf16", layout="hf", dtype="BF16", seed=3, mask_buffers=True),
    dict(SMALL, name="hf_untied", layout="hf", dtype="F32", seed=4, prefix="transformer.", tied=False, eps=1e-6, L=3),
    dict(SMALL, name="book_qkv_bias", layout="book", dtype="F32", seed=5, tied=False),
    dict(SMALL, name="book_no_qkv_bias", layout="book", dtype="F32", seed=6, tied=False, qkv_bias=False, H=2),
    # hf_f32's weights in the book's layout (out_head = wte): both must load to the same model.
    dict(SMALL, name="book_same_as_hf_f32", layout="book", dtype="F32", seed=1),
]


def write_dtypes(out):
    folder = os.path.join(out, "dtypes")
    os.makedirs(folder, exist_ok=True)
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    f16, bf16 = bits.view(torch.float16), bits.view(torch.bfloat16)
    save_safetensors({"f16": f16, "f16_as_f32": f16.float(), "bf16": bf16, "bf16_as_f32": bf16.float()},
                     os.path.join(folder, "all_halfs.safetensors"))


# [SECTION] the catalogue of broken checkpoints

def raw_safetensors(path, header, data):
    h = json.dumps(header).encode() if not isinstance(header, bytes) else header
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def read_raw(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def write_bad(out, good):
    """good: the folder of a valid hf_f32 checkpoint to break in one way per case."""
    bad = os.path.join(out, "bad")
    shutil.rmtree(bad, ignore_errors=True)
    os.makedirs(bad)
    header, data = read_raw(os.path.join(good, "model.safetensors"))
    with open(os.path.join(good, "config.json")) as f:
        config = json.load(f)
    cases = []

    def case(name, error, stage="load", path=None):
        folder = os.path.join(bad, name)
        if path is None:  # a copy of the good one, then broken by the caller
            shutil.copytree(good, folder, ignore=shutil.ignore_patterns("reference"))
        cases.append({"name": name, "path": path if path is not None else name, "error": error, "stage": stage})
        return folder

    def tensors(f, hdr=None, dat=None):
        raw_safetensors(os.path.join(f, "model.safetensors"), header if hdr is None else hdr, data if dat is None else dat)

    with open(os.path.join(good, "model.safetensors"), "rb") as f:
        blob = f.read()
    f = case("truncated", "outside the data")
    with open(os.path.join(f, "model.safetensors"), "wb") as w:
        w.write(blob[:len(blob) * 3 // 5])
    f = case("truncated_in_header", "past the end")
    with open(os.path.join(f, "model.safetensors"), "wb") as w:
        w.write(blob[:40])
    f = case("header_past_file", "past the end")
    with open(os.path.join(f, "model.safetensors"), "wb") as w:
        w.write(struct.pack("<Q", 1_000_000) + blob[8:1000])
    f = case("header_over_limit", "100 MB")
    with open(os.path.join(f, "model.safetensors"), "wb") as w:
        w.write(struct.pack("<Q", 9_000_000_000_000_000_000) + blob[8:1000])
    f = case("header_not_json", "not valid JSON")
    n = struct.unpack("<Q", blob[:8])[0]
    with open(os.path.join(f, "model.safetensors"), "wb") as w:
        w.write(blob[:8] + b"{\"wte.weight\": [" + b"x" * (n - 16) + blob[8 + n:])
    f = case("header_not_object", "not an object")
    tensors(f, hdr=b"[1, 2, 3]")

    def edited(name, error, edit, stage="load"):
        h = json.loads(json.dumps(header))
        edit(h)
        tensors(case(name, error, stage), hdr=h)

    def set_field(tensor, field, value):
        return lambda h: h[tensor].__setitem__(field, value)

    end = len(data)
    edited("offsets_outside", "outside the data", set_field("ln_f.bias", "data_offsets", [end - 64, end + 64]))
    b0, _ = header["ln_f.weight"]["data_offsets"]
    edited("offsets_not_shape", "needs 128", set_field("ln_f.weight", "data_offsets", [b0, b0 + 64]))
    edited("offsets_negative", "not non-negative", set_field("ln_f.weight", "data_offsets", [-4, b0 + 124]))
    wb = header["wte.weight"]["data_offsets"]
    edited("offsets_overlap", "overlap", set_field("ln_f.weight", "data_offsets", [wb[0], wb[0] + 128]))
    edited("unknown_dtype", "unknown dtype \"F12\"", set_field("ln_f.weight", "dtype", "F12"))
    edited("integer_dtype", "integer dtype I32", set_field("ln_f.weight", "dtype", "I32"))
    edited("shape_not_integers", "shape entry", set_field("ln_f.weight", "shape", ["32"]))
    edited("missing_tensor", "h.1.mlp.c_fc.bias is missing", lambda h: h.pop("h.1.mlp.c_fc.bias"))
    E = config["n_embd"]
    edited("misshaped_tensor", f"c_proj.weight has shape [{E // 2}, {2 * E}], expected [{E}, {E}]",
           set_field("h.0.attn.c_proj.weight", "shape", [E // 2, 2 * E]))
    edited("no_gpt_names", "neither a GPT-2", lambda h: h.__setitem__("w.weight", h.pop("wte.weight")))

    f = case("duplicate_name", "named twice")
    text = json.dumps(header)
    dup = '"ln_f.bias": ' + json.dumps(header["ln_f.bias"])
    tensors(f, hdr=(text[:-1] + ", " + dup + "}").encode())

    f = case("empty_file", "empty file")
    open(os.path.join(f, "model.safetensors"), "wb").close()
    f = case("config_missing", "config.json: missing")
    os.remove(os.path.join(f, "config.json"))

    def config_case(name, error, text):
        with open(os.path.join(case(name, error), "config.json"), "w") as w:
            w.write(text)

    config_case("config_not_json", "not valid JSON", json.dumps(config)[:-5])
    config_case("config_missing_key", "missing key \"n_head\"", json.dumps({k: v for k, v in config.items() if k != "n_head"}))
    config_case("config_of_no_kind", "no model_type, nor GPT-2's keys (n_layer, n_head, n_embd)",
                json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 300}))
    config_case("embd_not_multiple_of_heads", "not a multiple of", json.dumps(dict(config, n_head=5)))
    config_case("more_layers_than_file", "more layers than", json.dumps(dict(config, n_layer=config["n_layer"] + 1)))
    config_case("vocab_size_not_file", "wte.weight has shape", json.dumps(dict(config, vocab_size=config["vocab_size"] + 1)))
    # GPT2Config's switches to another computation: refused, not ignored.
    config_case("activation_relu", 'activation_function "relu" is not supported (mhaviz computes GPT-2\'s gelu_new)',
                json.dumps(dict(config, activation_function="relu")))
    config_case("attention_unscaled", "scale_attn_weights false is not supported",
                json.dumps(dict(config, scale_attn_weights=False)))
    config_case("attention_scaled_by_layer", "scale_attn_by_inverse_layer_idx true is not supported",
                json.dumps(dict(config, scale_attn_by_inverse_layer_idx=True)))
    config_case("mlp_not_4x", "n_inner 100 is not supported (GPT-2's MLP is 4 × n_embd",
                json.dumps(dict(config, n_inner=100)))

    f = case("vocab_missing", "vocab.json", stage="tokenizer")
    os.remove(os.path.join(f, "vocab.json"))
    f = case("merges_missing", "merges.txt", stage="tokenizer")
    os.remove(os.path.join(f, "merges.txt"))
    f = case("merges_corrupt", "merges.txt", stage="tokenizer")
    with open(os.path.join(f, "merges.txt"), "w", encoding="utf-8") as w:
        w.write("#version: 0.2\nĠ t\nnot-a-pair\n")
    f = case("vocab_corrupt", "vocab.json", stage="tokenizer")
    with open(os.path.join(f, "vocab.json"), "w") as w:
        w.write('{"a": 0, "b": ')

    os.makedirs(os.path.join(bad, "empty_folder"))
    case("empty_folder", "empty folder", path="empty_folder")
    case("does_not_exist", "does not exist", path="does_not_exist")
    with open(os.path.join(bad, "manifest.json"), "w") as w:
        json.dump({"cases": cases}, w, indent=1)


# [SECTION] a GPT-2-small-shaped checkpoint for benchmarks

def write_gpt2_small(folder):
    """Random, GPT-2 small's shapes (12 layers, 768 wide, 12 heads, vocab 50257, 1024 positions), F32, tied."""
    os.makedirs(folder, exist_ok=True)
    E, L, P, V = 768, 12, 1024, 50257
    p = random_params(123, E, L, P, V, tied=True)
    save_safetensors(hf_state(p, L), os.path.join(folder, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"n_layer": L, "n_head": 12, "n_embd": E, "n_positions": P, "vocab_size": V,
                   "layer_norm_epsilon": 1e-5, "model_type": "gpt2"}, f, indent=2)


def main():
    ap = argparse.ArgumentParser(description="small GPT checkpoints and their torch reference outputs")
    ap.add_argument("out", nargs="?", help="output folder for the test checkpoints")
    ap.add_argument("--bad", action="store_true", help="also write the catalogue of broken checkpoints in OUT/bad")
    ap.add_argument("--gpt2-small", metavar="DIR", help="write a random GPT-2-small-shaped checkpoint into DIR")
    a = ap.parse_args()
    if not a.out and not a.gpt2_small:
        ap.error("give OUT or --gpt2-small DIR")
    torch.set_num_threads(1)
    if a.gpt2_small:
        write_gpt2_small(a.gpt2_small)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        entries = [write_checkpoint(a.out, spec) for spec in CHECKPOINTS]
        write_dtypes(a.out)
        with open(os.path.join(a.out, "manifest.json"), "w") as f:
            json.dump({"checkpoints": entries, "token_ids": TOKEN_IDS}, f, indent=1)
        if a.bad:
            write_bad(a.out, os.path.join(a.out, "hf_f32"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
