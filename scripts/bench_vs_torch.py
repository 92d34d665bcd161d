#!/usr/bin/python3
"""Times PyTorch's CPU forward of the seeds' MultiHeadAttention (seed 003) beside
`mhaviz bench` at the same sizes, in the same run, and prints medians and ratios.

Usage: scripts/bench_vs_torch.py PATH/TO/mhaviz [--tokens 128 512 1024] [--rounds 3]
                                  [--backends auto avx2 openblas]

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


def torch_median_ms(tokens, d, heads, repeat):
    torch.manual_seed(123)
    mha = MultiHeadAttention(d, d, tokens, 0.0, heads)
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


def sgemm_peak_gflops(tokens, d, repeat):
    """The best rate torch.mm (OpenBLAS here) reaches in this run, on the projection's shape
    and on a large square product. In a child process: freeing the large operands here would
    raise glibc's mmap threshold and spare torch's forward the page faults it otherwise pays."""
    out = subprocess.run([sys.executable, __file__, "--sgemm-peak", str(tokens), str(d), str(repeat)], check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def sgemm_peak_here(tokens, d, repeat):
    best = 0.0
    for m, k, n in ((tokens, d, 3 * d), (2048, 2048, 2048)):
        a, b = torch.rand(m, k), torch.rand(k, n)
        for _ in range(2):
            torch.mm(a, b)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            torch.mm(a, b)
            times.append(time.perf_counter() - t0)
        best = max(best, 2 * m * k * n / statistics.median(times) / 1e9)
    return best


def mhaviz_median_ms(binary, tokens, d, heads, repeat, backend):
    # Warm-up runs as many as timed ones: on this kind of virtual machine a fresh process's
    # first ~0.1 s of two-thread work often runs at half speed.
    out = subprocess.run([binary, "bench", "--variant", "weight_split", "--tokens", str(tokens), "--d-in", str(d),
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
            sgemm = max(sgemm, sgemm_peak_gflops(tokens, args.d, 5))  # its own process: not per thread count
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


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--sgemm-peak":
        print(sgemm_peak_here(*map(int, sys.argv[2:])))
    else:
        main()
