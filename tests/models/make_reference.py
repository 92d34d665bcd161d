#!/usr/bin/python3
"""PyTorch's tensors for mhaviz session files: tests/data/reference/expected/NAME.json.

    make_reference.py SESSION.json [...] -o OUT_DIR   write OUT_DIR/NAME.json for each session
    make_reference.py --check SESSIONS_DIR EXPECTED_DIR
                                                    recompute every session in SESSIONS_DIR and
                                                    compare with EXPECTED_DIR/NAME.json (exit 1 on
                                                    a difference over 1e-6, or a changed dropout cell)

The modules are the ones the seeds print, built in their construction order right after
torch.manual_seed(model.seed) and left in training mode (dropout active when > 0, unless the
session says "training": false):

- wrapper       MultiHeadAttentionWrapper: num_heads CausalAttention(d_in, d_out) heads, each
                W_query, W_key, W_value; outputs concatenated (chapter 3 of the book)
- weight_split  MultiHeadAttention: W_query, W_key, W_value (d_in -> d_out), views into heads of
                d_out / num_heads, out_proj (with bias)
- fused_qkv     the Transformer tutorial's qkv_layer (d_in -> 3 d_out, chunked per head as
                [q | k | v]) and linear_layer

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

    def __init__(self, d_out, num_heads, context_length, dropout, causal):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.dropout = nn.Dropout(dropout)
        self.causal = causal
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))


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
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal):
        super().__init__(d_out, num_heads, context_length, dropout, causal)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, T, _ = x.shape

        def heads(t):
            return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)

        keep = {}
        context = split_attention(heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x)),
                                  self.mask if self.causal else None, self.dropout, keep)
        merged = context.transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.out_proj(merged), keep


class FusedQkvAttention(Attention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal):
        super().__init__(d_out, num_heads, context_length, dropout, causal)
        self.qkv_layer = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.linear_layer = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, T, _ = x.shape
        qkv = self.qkv_layer(x).reshape(b, T, self.num_heads, 3 * self.head_dim).permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        keep = {}
        context = split_attention(q, k, v, self.mask if self.causal else None, self.dropout, keep)
        merged = context.permute(0, 2, 1, 3).reshape(b, T, self.d_out)
        return self.linear_layer(merged), keep


MODULES = {"wrapper": MultiHeadAttentionWrapper, "weight_split": MultiHeadAttention, "fused_qkv": FusedQkvAttention}


# [SECTION] sessions -> tensors

def expected_for(session):
    m = session["model"]
    x = torch.tensor(session["embeddings"], dtype=torch.float32)
    batch = torch.stack([x] * session["batch"], dim=0)
    torch.manual_seed(m["seed"])
    module = MODULES[m["variant"]](len(session["embeddings"][0]), m["d_out"], m["context_length"], m["dropout"],
                                   m["num_heads"], m["qkv_bias"], m["causal"])
    module.train(m.get("training", True))
    with torch.no_grad():
        out, keep = module(batch)
    tensors = {}
    for name, p in module.state_dict().items():
        if not name.endswith("mask"):
            tensors[name] = p
    tensors.update(keep)
    tensors["output"] = out
    return {name: {"shape": list(t.shape), "data": t.reshape(-1).tolist()} for name, t in tensors.items()}


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
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.check:
        sys.exit(1 if check(*a.check) else 0)
    if not a.out or not a.sessions:
        ap.error("give SESSION.json files and -o OUT_DIR (or --check)")
    for path in a.sessions:
        with open(path) as f:
            tensors = expected_for(json.load(f))
        out = os.path.join(a.out, os.path.basename(path))
        with open(out + ".tmp", "w") as f:
            json.dump({"tensors": tensors}, f)
        os.replace(out + ".tmp", out)
        print("wrote " + out)


if __name__ == "__main__":
    main()
