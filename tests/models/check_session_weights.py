#!/usr/bin/python3
"""A reader's trained chapter-3 module in a session, end to end against PyTorch.

    check_session_weights.py MHAVIZ WORKDIR

For the weight-split MultiHeadAttention and the MultiHeadAttentionWrapper: build the module,
train it a few steps (so its parameters are no longer any seed's init), save it with
scripts/export_for_mhaviz.py's export_attention, write a session whose model.weights names
the file (and whose seed differs from the one used here), run `mhaviz dump --eval`, and
compare its output with the module's own in eval mode. Exit status 1 on a mismatch.
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from bench_vs_torch import MultiHeadAttention  # noqa: E402  (seed 003's module, as printed there)
from export_for_mhaviz import export_attention  # noqa: E402


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        _, t, _ = x.shape
        scores = self.W_query(x) @ self.W_key(x).transpose(1, 2)
        scores.masked_fill_(self.mask.bool()[:t, :t], -torch.inf)
        w = self.dropout(torch.softmax(scores / self.W_key.out_features ** 0.5, dim=-1))
        return w @ self.W_value(x)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


def trained(module, x):
    """A few steps of SGD towards a fixed random target: parameters away from any init."""
    opt = torch.optim.SGD(module.parameters(), lr=0.5)
    target = torch.randn_like(module(x))
    for _ in range(5):
        opt.zero_grad()
        ((module(x) - target) ** 2).mean().backward()
        opt.step()
    return module.eval()


def check(mhaviz, work, name, variant, module, d_out, heads, x):
    path = os.path.join(work, name + ".safetensors")
    export_attention(module, path)
    session = {
        "format": "mhaviz-session", "version": 1,
        "tokens": [f"t{i}" for i in range(x.shape[1])],
        "embeddings": [[float(v) for v in row] for row in x[0]],
        "batch": 1,
        "model": {"variant": variant, "d_out": d_out, "num_heads": heads, "context_length": x.shape[1],
                  "dropout": 0.0, "qkv_bias": True, "causal": True, "seed": 4242,
                  "weights": os.path.basename(path)},
    }
    session_path = os.path.join(work, name + ".json")
    with open(session_path, "w") as f:
        json.dump(session, f)
    r = subprocess.run([mhaviz, "dump", session_path, "--eval"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{name}: mhaviz dump failed: {r.stderr.strip()}")
        return False
    got = json.loads(r.stdout)["tensors"]["output"]
    with torch.no_grad():
        want = module(x)
    diff = (torch.tensor(got["data"]).reshape(got["shape"]) - want).abs().max().item()
    print(f"{name}: output {list(want.shape)}, max |mhaviz - torch| = {diff:.3g}")
    return list(want.shape) == got["shape"] and diff < 1e-5


def main():
    mhaviz, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(7)
    # Embeddings with two decimals, as float32: the session's JSON holds them exactly.
    x = (torch.rand(1, 5, 4) * 200 - 100).round() / 100
    x = x.to(torch.float32)
    ok = check(mhaviz, work, "weight_split", "weight_split", trained(MultiHeadAttention(4, 6, 5, 0.0, 3, qkv_bias=True), x), 6, 3, x)
    ok &= check(mhaviz, work, "wrapper", "wrapper", trained(MultiHeadAttentionWrapper(4, 2, 5, 0.0, 2, qkv_bias=True), x), 2, 2, x)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
