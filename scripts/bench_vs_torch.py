#!/usr/bin/python3
"""Times PyTorch's CPU forward of the seeds' MultiHeadAttention (seed 003) beside
`mhaviz bench` at the same sizes, in the same run, and prints medians and ratios.

Usage: scripts/bench_vs_torch.py PATH/TO/mhaviz [--tokens 128 512 1024] [--rounds 3]
                                  [--backends auto avx2 openblas] [--variants gqa:4 window:256]

--variants adds, at the last --tokens size, the book's GroupedQueryAttention with G K/V heads
(gqa:G) and MultiHeadAttentionWithSWA with a window of W keys (window:W) beside plain
weight_split, each timed in mhaviz and in PyTorch in the same alternating rounds.

Each backend gets its own ratio (mhaviz's time over PyTorch's), and each size a floor: the
ratio if every product ran at the SGEMM peak torch.mm reaches in the same run and nothing
else took any time (no code on the machine goes below it). On a CPU with AVX-512,
`--backends avx2` with ATEN_CPU_CAPABILITY=avx2 and OPENBLAS_CORETYPE=Haswell in the
environment holds both programs to the AVX2 code they would run on a CPU without it.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_floor import sgemm_peak_gflops  # noqa: E402  (the SGEMM peak, in a process of its own)


class MultiHeadAttention(nn.Module):
    """Seed 003's MultiHeadAttention, as printed there."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


class VariantAttention(MultiHeadAttention):
    """The book's GroupedQueryAttention (kv_heads K/V heads, repeat_interleave to the query heads;
    out_proj without bias) and MultiHeadAttentionWithSWA (window: i - j >= W hidden), without
    their caches."""

    def __init__(self, d, tokens, heads, kv_heads, window):
        super().__init__(d, d, tokens, 0.0, heads)
        self.kv_heads = kv_heads
        self.W_key = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.W_value = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        pos = torch.arange(tokens)
        diff = pos.unsqueeze(-1) - pos.unsqueeze(0)
        self.hidden = (diff < 0) | (diff >= (window or tokens + 1))

    def forward(self, x):
        b, T, _ = x.shape
        q = self.W_query(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, T, self.kv_heads, self.head_dim).transpose(1, 2)
        group = self.num_heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(2, 3)).masked_fill_(self.hidden[:T, :T], -torch.inf)
        weights = torch.softmax(scores / self.head_dim ** 0.5, dim=-1)
        return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out))


def parse_variant(text, heads):
    """"weight_split", "gqa:G" or "window:W" -> (K/V heads, window, mhaviz bench arguments)."""
    kind, _, n = text.partition(":")
    if kind == "gqa":
        return int(n), 0, ["--variant", "gqa", "--kv-heads", n]
    if kind == "window":
        return heads, int(n), ["--variant", "weight_split", "--window", n]
    return heads, 0, ["--variant", "weight_split"]


def torch_median_ms(tokens, d, heads, repeat, variant="weight_split"):
    torch.manual_seed(123)
    kv_heads, window, _ = parse_variant(variant, heads)
    mha = (MultiHeadAttention(d, d, tokens, 0.0, heads) if variant == "weight_split" else
           VariantAttention(d, tokens, heads, kv_heads, window))
    x = torch.rand(1, tokens, d) * 2 - 1
    times = []
    with torch.no_grad():
        for _ in range(repeat):  # as many warm-up runs as timed ones, as mhaviz gets
            mha(x)
        for _ in range(repeat):
            t0 = time.perf_counter()
            mha(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def module_flops(tokens, d, heads):
    """Multiply-adds ×2 a forward needs: four d×d projections, the full q·kᵀ (the raw scores
    are kept and shown) and, under the causal mask, the lower triangle of weights·v."""
    hd = d // heads
    return 2 * tokens * d * d * 4 + 2 * tokens * tokens * d + heads * tokens * (tokens + 1) * hd


def mhaviz_median_ms(binary, tokens, d, heads, repeat, backend, variant="weight_split"):
    # Warm-up runs as many as timed ones: on this kind of virtual machine a fresh process's
    # first ~0.1 s of two-thread work often runs at half speed.
    out = subprocess.run([binary, "bench", *parse_variant(variant, heads)[2], "--tokens", str(tokens), "--d-in", str(d),
                          "--d-out", str(d), "--heads", str(heads), "--repeat", str(repeat), "--warmup", str(repeat),
                          "--backend", backend],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"median_ms=([0-9.]+) gflops=([0-9.]+) peak_rss_mib=([0-9.]+)", out)
    return float(m.group(1)), float(m.group(3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mhaviz")
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 512, 1024])
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--torch-threads", type=int, nargs="+", default=sorted({1, os.cpu_count()}),
                    help="thread counts to time torch with; the fastest is the reference at each size")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; the median of round medians is reported")
    ap.add_argument("--backends", nargs="+", default=["auto", "openblas"],
                    help="mhaviz backends to time (auto, avx512, avx2, openblas); a ratio for each")
    ap.add_argument("--variants", nargs="*", default=[],
                    help="gqa:G and window:W, timed beside weight_split at the last --tokens size")
    args = ap.parse_args()
    capability = os.environ.get("ATEN_CPU_CAPABILITY", "default")
    coretype = os.environ.get("OPENBLAS_CORETYPE", "auto")
    print(f"torch {torch.__version__}, ATEN_CPU_CAPABILITY={capability}, OPENBLAS_CORETYPE={coretype} (fastest of {args.torch_threads} threads, no_grad); "
          f"d_in = d_out = {args.d}, {args.heads} heads, b = 1; median of {args.rounds} alternating rounds")
    print("floor: the ratio if every product ran at the SGEMM peak measured here (torch.mm, best of the projection's "
          "shape and 2048³) and nothing else took time")
    print(f"{'T':>6} {'torch ms':>10} {'threads':>8}" + "".join(f" {b + ' ms':>13}" for b in args.backends) +
          "".join(f" {'ratio ' + b:>14}" for b in args.backends) + f" {'sgemm GF/s':>11} {'floor':>6} {'mhaviz RSS MiB':>15}")
    for tokens in args.tokens:
        repeat = 30 if tokens <= 256 else 10
        ours, theirs, rss = {b: [] for b in args.backends}, {n: [] for n in args.torch_threads}, 0.0
        sgemm = 0.0
        for _ in range(args.rounds):  # alternate so both see the same machine noise
            for n in args.torch_threads:
                torch.set_num_threads(n)
                theirs[n].append(torch_median_ms(tokens, args.d, args.heads, repeat))
            # In its own process, once a round (not per thread count): the best of the projection's
            # shape and 2048³.
            sgemm = max(sgemm, sgemm_peak_gflops([(tokens, args.d, 3 * args.d)], 5))
            for b in args.backends:
                ms, peak = mhaviz_median_ms(args.mhaviz, tokens, args.d, args.heads, repeat, b)
                ours[b].append(ms)
                if b == args.backends[0]:
                    rss = peak
        threads, t = min(((n, statistics.median(v)) for n, v in theirs.items()), key=lambda x: x[1])
        o = {b: statistics.median(v) for b, v in ours.items()}
        print(f"{tokens:>6} {t:>10.2f} {threads:>8}" + "".join(f" {o[b]:>13.2f}" for b in args.backends) +
              "".join(f" {o[b] / t:>14.2f}" for b in args.backends) +
              f" {sgemm:>11.0f} {module_flops(tokens, args.d, args.heads) / sgemm / 1e6 / t:>6.2f} {rss:>15.1f}")
    if args.variants:
        compare_variants(args)


def compare_variants(args):
    """Each variant beside weight_split at the last size, mhaviz (first backend) and torch,
    in alternating rounds; torch at its fastest thread count."""
    tokens, backend = args.tokens[-1], args.backends[0]
    variants = ["weight_split"] + args.variants
    ours, theirs = {v: [] for v in variants}, {(v, n): [] for v in variants for n in args.torch_threads}
    for _ in range(args.rounds):
        for v in variants:
            for n in args.torch_threads:
                torch.set_num_threads(n)
                theirs[(v, n)].append(torch_median_ms(tokens, args.d, args.heads, 10, v))
            ours[v].append(mhaviz_median_ms(args.mhaviz, tokens, args.d, args.heads, 10, backend, v)[0])
    print(f"variants at T = {tokens} ({backend}):")
    print(f"{'variant':>14} {'mhaviz ms':>10} {'torch ms':>9} {'ratio':>6} {'mhaviz / weight_split':>22}")
    base = statistics.median(ours["weight_split"])
    for v in variants:
        o = statistics.median(ours[v])
        t = min(statistics.median(theirs[(v, n)]) for n in args.torch_threads)
        print(f"{v:>14} {o:>10.2f} {t:>9.2f} {o / t:>6.2f} {o / base:>22.2f}")


if __name__ == "__main__":
    main()
