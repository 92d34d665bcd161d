#!/usr/bin/python3
"""PyTorch's tensors for mhaviz session files: tests/data/reference/expected/NAME.json.

    make_reference.py SESSION.json [...] -o OUT_DIR   write OUT_DIR/NAME.json for each session
    make_reference.py --check SESSIONS_DIR EXPECTED_DIR
                                                    recompute every session in SESSIONS_DIR and
                                                    compare with EXPECTED_DIR/NAME.json (exit 1 on
                                                    a difference over 1e-6, or a changed dropout cell)
    make_reference.py --random N OUT_DIR            N random sessions of the book's bonus variants and
                                                    options (OUT_DIR/sessions/NAME.json) with every
                                                    named intermediate PyTorch computed for them
                                                    (OUT_DIR/expected/NAME.json), the same N each run

The modules are the ones the seeds print, built in their construction order right after
torch.manual_seed(model.seed) and left in training mode (dropout active when > 0, unless the
session says "training": false):

- wrapper       MultiHeadAttentionWrapper: num_heads CausalAttention(d_in, d_out) heads, each
                W_query, W_key, W_value; outputs concatenated (chapter 3 of the book)
- weight_split  MultiHeadAttention: W_query, W_key, W_value (d_in -> d_out), views into heads of
                d_out / num_heads, out_proj (with bias)
- fused_qkv     the Transformer tutorial's qkv_layer (d_in -> 3 d_out, chunked per head as
                [q | k | v]) and linear_layer
- gqa           GroupedQueryAttention (the book's ch04/04_gqa): W_key, W_value (d_in ->
                num_kv_groups * head_dim), W_query, out_proj without bias; K/V heads expanded by
                repeat_interleave(num_heads // num_kv_groups, dim=1)
- mla           MultiHeadLatentAttention (ch04/05_mla): W_query, W_DKV (d_in -> latent_dim), W_UK,
                W_UV (latent_dim -> d_out), out_proj
- sliding_window on the split variants: key j visible to query i only when 0 <= i - j < W, as
                MultiHeadAttentionWithSWA (ch04/06_swa)
- qk_norm       on the split variants: RMSNorm(head_dim, eps=1e-6) q_norm and k_norm on the heads'
                queries and keys (the book's Qwen3 GroupedQueryAttention), scales initialised to ones
- rope_base     on the split variants but mla: RoPE after QK-norm, split halves, positions from 0
                (the book's compute_rope_params / apply_rope, as in its Llama 3 and Qwen3 code)

Output: {"tensors": {NAME: {"shape": [...], "data": [row-major values]}}} with the parameters
under their state_dict names, attn_scores (b, h, T, T) before mask and scaling, attn_weights,
attn_weights_dropped, context (b, h, T, hd), output. Needs torch (Debian's python3-torch,
run with /usr/bin/python3).
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn


# [SECTION] modules, as the seeds write them (every intermediate kept for the dump)

class Attention(nn.Module):
    """What every variant holds besides its Linears: dropout and the causal mask. Neither
    draws from the generator, so the subclasses' Linears still draw in the seeds' order."""

    def __init__(self, d_out, num_heads, context_length, dropout, causal, window=None):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.dropout = nn.Dropout(dropout)
        self.causal = causal
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        if window is not None:
            # MultiHeadAttentionWithSWA's rule: hidden when i - j < 0 or i - j >= W.
            pos = torch.arange(context_length)
            diff = pos.unsqueeze(-1) - pos.unsqueeze(0)
            self.mask = ((diff < 0) | (diff >= window)).float()

    def add_qk(self, rope_base, qk_norm, context_length):
        """QK-norm and RoPE: modules added after the Linears (ones, no draw from the generator)
        and angles kept as plain attributes, out of the state_dict."""
        if qk_norm:
            self.q_norm = RMSNorm(self.head_dim)
            self.k_norm = RMSNorm(self.head_dim)
        self.rope = compute_rope_params(self.head_dim, rope_base, context_length) if rope_base else None

    def qk(self, q, k, keep):
        """q (b, h, T, hd), k (b, G, T, hd) -> what attention reads, each step kept."""
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
            keep.update(q_normed=q, k_normed=k)
        if getattr(self, "rope", None) is not None:
            q, k = apply_rope(q, *self.rope), apply_rope(k, *self.rope)
            keep.update(q_rotated=q, k_rotated=k)
        return q, k

    def attention_mask(self):
        return self.mask if self.causal else None

    def attend(self, q, k, v, keep):
        """q, k, v (b, h, T, hd) -> the merged context (b, T, d_out), each step kept."""
        b, _, T, _ = q.shape
        context = split_attention(q, k, v, self.attention_mask(), self.dropout, keep)
        keep["context_merged"] = context.transpose(1, 2).contiguous().view(b, T, self.d_out)
        return keep["context_merged"]


class RMSNorm(nn.Module):
    """The book's Qwen3 RMSNorm (qwen3_compatible, no shift): x / sqrt(mean(x^2) + eps) * scale."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x.to(torch.float32)
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(variance + self.eps) * self.scale


def compute_rope_params(head_dim, theta_base, context_length):
    """The book's compute_rope_params: cos and sin (context_length, head_dim), angles repeated
    for both halves."""
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=torch.float32)[: head_dim // 2].float()
                                     / head_dim))
    positions = torch.arange(context_length, dtype=torch.float32)
    angles = positions.unsqueeze(1) * inv_freq.unsqueeze(0)
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    """The book's apply_rope: x (b, h, T, hd) -> x * cos + cat(-x2, x1) * sin."""
    T, hd = x.shape[2], x.shape[3]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos[:T, :].unsqueeze(0).unsqueeze(0) + rotated * sin[:T, :].unsqueeze(0).unsqueeze(0)


class CausalAttention(Attention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias, causal):
        super().__init__(d_out, 1, context_length, dropout, causal)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x, keep):
        T = x.shape[1]
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        scores = queries @ keys.transpose(1, 2)
        keep["attn_scores"].append(scores.clone())
        if self.causal:
            scores = scores.masked_fill(self.mask.bool()[:T, :T], -torch.inf)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        keep["attn_weights"].append(weights)
        weights = self.dropout(weights)
        keep["attn_weights_dropped"].append(weights)
        context = weights @ values
        keep["context"].append(context)
        return context


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias, causal)
                                    for _ in range(num_heads)])

    def forward(self, x):
        keep = {k: [] for k in ("attn_scores", "attn_weights", "attn_weights_dropped", "context")}
        out = torch.cat([head(x, keep) for head in self.heads], dim=-1)
        # Heads stacked on dim 1: (b, h, T, T) and (b, h, T, d_out), as mhaviz names them.
        return out, {k: torch.stack(v, dim=1) for k, v in keep.items()}


def split_attention(q, k, v, mask, dropout, keep):
    """q, k, v (b, h, T, hd) -> context (b, h, T, hd); keeps the scores and weights."""
    T, hd = q.shape[2], q.shape[3]
    scores = q @ k.transpose(2, 3)
    keep["attn_scores"] = scores.clone()
    if mask is not None:
        scores = scores.masked_fill(mask.bool()[:T, :T], -torch.inf)
    weights = torch.softmax(scores / hd ** 0.5, dim=-1)
    keep["attn_weights"] = weights
    weights = dropout(weights)
    keep["attn_weights_dropped"] = weights
    context = weights @ v
    keep["context"] = context
    return context


class MultiHeadAttention(Attention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal, window=None):
        super().__init__(d_out, num_heads, context_length, dropout, causal, window)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, T, _ = x.shape

        def heads(t):
            return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        keep = {"queries": queries, "keys": keys, "values": values}
        q, k, v = heads(queries), heads(keys), heads(values)
        keep.update(q=q, k=k, v=v)
        q, k = self.qk(q, k, keep)
        return self.out_proj(self.attend(q, k, v, keep)), keep


class GroupedQueryAttention(Attention):
    """The book's GroupedQueryAttention without its cache: num_kv_groups K/V heads, each read by
    num_heads // num_kv_groups query heads."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal, window=None,
                 num_kv_groups=1):
        super().__init__(d_out, num_heads, context_length, dropout, causal, window)
        self.num_kv_groups = num_kv_groups
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, T, _ = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        keep = {"queries": queries, "keys": keys, "values": values}
        q = queries.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = keys.view(b, T, self.num_kv_groups, self.head_dim).transpose(1, 2)
        v = values.view(b, T, self.num_kv_groups, self.head_dim).transpose(1, 2)
        keep.update(q=q, k=k, v=v)
        q, k = self.qk(q, k, keep)
        group = self.num_heads // self.num_kv_groups
        k_expanded, v_expanded = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        keep.update(k_expanded=k_expanded, v_expanded=v_expanded)
        return self.out_proj(self.attend(q, k_expanded, v_expanded, keep)), keep


class MultiHeadLatentAttention(Attention):
    """The book's MultiHeadLatentAttention without its cache: keys and values up-projected from
    one latent of latent_dim per token."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal, window=None,
                 latent_dim=None):
        super().__init__(d_out, num_heads, context_length, dropout, causal, window)
        self.latent_dim = latent_dim if latent_dim is not None else max(16, d_out // 8)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_DKV = nn.Linear(d_in, self.latent_dim, bias=qkv_bias)
        self.W_UK = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)
        self.W_UV = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, T, _ = x.shape

        def heads(t):
            return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)

        queries, latent = self.W_query(x), self.W_DKV(x)
        keys, values = self.W_UK(latent), self.W_UV(latent)
        keep = {"queries": queries, "latent": latent, "keys": keys, "values": values}
        q, k, v = heads(queries), heads(keys), heads(values)
        keep.update(q=q, k=k, v=v)
        q, k = self.qk(q, k, keep)
        return self.out_proj(self.attend(q, k, v, keep)), keep


class FusedQkvAttention(Attention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal, window=None):
        super().__init__(d_out, num_heads, context_length, dropout, causal, window)
        self.qkv_layer = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.linear_layer = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, T, _ = x.shape
        qkv_flat = self.qkv_layer(x)
        qkv = qkv_flat.reshape(b, T, self.num_heads, 3 * self.head_dim).permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        keep = {"qkv": qkv_flat, "q": q, "k": k, "v": v}
        for name, t in (("queries", q), ("keys", k), ("values", v)):
            keep[name] = t.permute(0, 2, 1, 3).reshape(b, T, self.d_out)
        q, k = self.qk(q, k, keep)
        context = split_attention(q, k, v, self.attention_mask(), self.dropout, keep)
        merged = context.permute(0, 2, 1, 3).reshape(b, T, self.d_out)
        keep["context_merged"] = merged
        return self.linear_layer(merged), keep


MODULES = {"wrapper": MultiHeadAttentionWrapper, "weight_split": MultiHeadAttention, "fused_qkv": FusedQkvAttention,
           "gqa": GroupedQueryAttention, "mla": MultiHeadLatentAttention}
# The tensors the chapter-3 reference files hold (tests/data/reference/expected); --random
# sessions hold every intermediate mhaviz names.
CHAPTER3 = ("attn_scores", "attn_weights", "attn_weights_dropped", "context")


# [SECTION] sessions -> tensors

def expected_for(session, every=False):
    """every: all the intermediates mhaviz names (input, queries, q, k_expanded, latent, ...);
    else the chapter-3 set the committed reference files hold."""
    m = session["model"]
    x = torch.tensor(session["embeddings"], dtype=torch.float32)
    batch = torch.stack([x] * session["batch"], dim=0)
    torch.manual_seed(m["seed"])
    extra = {}
    if m.get("sliding_window") is not None:
        extra["window"] = m["sliding_window"]
    if m["variant"] == "gqa":
        extra["num_kv_groups"] = m["num_kv_groups"]
    if m["variant"] == "mla":
        extra["latent_dim"] = m.get("latent_dim")
    module = MODULES[m["variant"]](len(session["embeddings"][0]), m["d_out"], m["context_length"], m["dropout"],
                                   m["num_heads"], m["qkv_bias"], m["causal"], **extra)
    if m.get("rope_base") is not None or m.get("qk_norm"):
        module.add_qk(m.get("rope_base"), m.get("qk_norm", False), m["context_length"])
    module.train(m.get("training", True))
    with torch.no_grad():
        out, keep = module(batch)
    tensors = {}
    for name, p in module.state_dict().items():
        if not name.endswith("mask"):
            tensors[name] = p
    tensors.update(keep if every else {k: keep[k] for k in CHAPTER3})
    if every:
        tensors["input"] = batch
    tensors["output"] = out
    return {name: {"shape": list(t.shape), "data": t.reshape(-1).tolist()} for name, t in tensors.items()}


def random_session(rng, index):
    """One random session of the bonus variants and options: b <= 3, dropout in training and
    eval mode, with and without qkv_bias, small enough for a test of seconds."""
    kinds = [("gqa", False), ("gqa", True), ("mla", False), ("mla", True), ("weight_split", True), ("fused_qkv", True),
             ("weight_split", False), ("fused_qkv", False)]
    variant, windowed = kinds[index % len(kinds)]
    heads = rng.choice([1, 2, 3, 4, 6])
    head_dim = rng.choice([1, 2, 3, 4])
    T = rng.randint(1, 9)
    d_in = rng.randint(1, 7)
    model = {"variant": variant, "d_out": heads * head_dim, "num_heads": heads, "context_length": T + rng.randint(0, 3),
             "dropout": rng.choice([0.0, 0.1, 0.3, 0.5]), "qkv_bias": index % 4 >= 2,
             "causal": windowed or rng.random() < 0.7, "seed": rng.randint(0, 2 ** 32 - 1),
             "training": (index // 12) % 2 == 0}
    if variant == "gqa":
        model["num_kv_groups"] = rng.choice([g for g in range(1, heads + 1) if heads % g == 0])
    if variant == "mla" and rng.random() < 0.5:
        model["latent_dim"] = rng.randint(1, 6)  # else the default, max(16, d_out // 8)
    if windowed:
        model["sliding_window"] = rng.randint(1, T + 1)
    if rng.random() < 0.4:
        model["qk_norm"] = True
    if variant != "mla" and head_dim % 2 == 0 and rng.random() < 0.5:
        model["rope_base"] = rng.choice([100.0, 10000.0, 500000.0])
    return {"format": "mhaviz-session", "version": 3, "tokens": ["t%d" % i for i in range(T)],
            "embeddings": [[round(rng.uniform(-1, 1), 2) for _ in range(d_in)] for _ in range(T)],
            "batch": rng.randint(1, 3), "model": model}


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


def write_random(count, out_dir):
    import random
    rng = random.Random(2024)
    for sub in ("sessions", "expected"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
        for old in os.listdir(os.path.join(out_dir, sub)):  # a generator of other names left them
            if old.endswith(".json"):
                os.remove(os.path.join(out_dir, sub, old))
    for i in range(count):
        session = random_session(rng, i)
        m = session["model"]
        name = "%03d-%s%s%s%s" % (i, m["variant"], "-window" if "sliding_window" in m else "",
                                  "-qknorm" if "qk_norm" in m else "", "-rope" if "rope_base" in m else "")
        write_json(os.path.join(out_dir, "sessions", name + ".json"), session)
        write_json(os.path.join(out_dir, "expected", name + ".json"), {"tensors": expected_for(session, every=True)})
    print("wrote %d sessions and their tensors in %s" % (count, out_dir))


def check(sessions_dir, expected_dir):
    bad = 0
    for fname in sorted(os.listdir(sessions_dir)):
        name = fname[:-len(".json")]
        with open(os.path.join(sessions_dir, fname)) as f:
            got = expected_for(json.load(f))
        with open(os.path.join(expected_dir, fname)) as f:
            want = json.load(f)["tensors"]
        worst, dropped_differ = 0.0, 0
        for key, w in want.items():
            g = got[key]
            if g["shape"] != w["shape"]:
                print("%s: %s shape %s, expected %s" % (name, key, g["shape"], w["shape"]))
                bad += 1
                continue
            worst = max([worst] + [abs(a - b) for a, b in zip(g["data"], w["data"])])
            if key == "attn_weights_dropped":
                dropped_differ += sum((a == 0) != (b == 0) for a, b in zip(g["data"], w["data"]))
        ok = worst <= 1e-6 and dropped_differ == 0 and set(got) == set(want)
        bad += not ok
        print("%-4s %s: largest difference %.3g, dropout cells differing %d" % ("ok" if ok else "FAIL", name, worst,
                                                                             dropped_differ))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sessions", nargs="*")
    ap.add_argument("-o", "--out")
    ap.add_argument("--check", nargs=2, metavar=("SESSIONS_DIR", "EXPECTED_DIR"))
    ap.add_argument("--random", nargs=2, metavar=("N", "OUT_DIR"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.check:
        sys.exit(1 if check(*a.check) else 0)
    if a.random:
        write_random(int(a.random[0]), a.random[1])
        return
    if not a.out or not a.sessions:
        ap.error("give SESSION.json files and -o OUT_DIR (or --check)")
    for path in a.sessions:
        with open(path) as f:
            tensors = expected_for(json.load(f))
        out = os.path.join(a.out, os.path.basename(path))
        write_json(out, {"tensors": tensors})
        print("wrote " + out)


if __name__ == "__main__":
    main()
