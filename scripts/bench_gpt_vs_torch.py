#!/usr/bin/python3
"""mhaviz's trained-GPT forward against the same forward in PyTorch, timed in the same run.

    bench_gpt_vs_torch.py MHAVIZ MODEL_DIR [--tokens 256] [--rounds 3]

MODEL_DIR holds a GPT-2-layout model.safetensors (F32) and config.json, e.g. the random
GPT-2-small-shaped one `tests/models/make_checkpoints.py --gpt2-small DIR` writes. Both sides
compute the whole forward keeping every layer's attention weights, to the logits of the last
position: torch under no_grad, best of 1 and 2 threads; mhaviz with `bench --model`. Then
mhaviz's recompute after an edit at the last position, and its peak RSS against the file.

Each round also measures the SGEMM peak torch.mm reaches (scripts/bench_floor.py, in a
process of its own) and prints the forward's floor, its products' FLOPs (listed at the start)
at the best peak of the rounds so far, as bench_vs_torch.py does, and mhaviz's time over it
(the goal: at most 1.25). A busy machine slows a short probe of the peak as much as a
forward, so the best of a few rounds is the nearer to the machine's limit. When `mhaviz bench --edit-at`
reports read_once_ms (reading every weight once on the forward's threads), the edit is printed
over it too (the goal: at most 1.3).
"""
import argparse
import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_floor import describe, forward_products, peak_shapes, sgemm_peak_gflops  # noqa: E402


def load(folder):
    """The safetensors file as torch tensors (F32 only: what make_checkpoints writes)."""
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", f"{name}: {t['dtype']} (this script reads F32 only)"
        b, e = t["data_offsets"]
        out[name.removeprefix("transformer.")] = torch.frombuffer(bytearray(data[b:e]), dtype=torch.float32).reshape(t["shape"])
    with open(os.path.join(folder, "config.json")) as f:
        return out, json.load(f)


def forward(p, cfg, ids):
    """GPT-2: LayerNorm -> attention (every layer's weights kept) -> MLP (tanh GELU); last logits."""
    L, H, eps = cfg["n_layer"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
    T = ids.shape[0]
    x = p["wte.weight"][ids] + p["wpe.weight"][:T]
    E = x.shape[1]
    hd = E // H
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    kept = []
    for i in range(L):
        h = f"h.{i}."
        a = torch.nn.functional.layer_norm(x, (E,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps)
        qkv = torch.addmm(p[h + "attn.c_attn.bias"], a, p[h + "attn.c_attn.weight"])  # Conv1D: [in, out]
        q, k, v = (qkv[:, j * E:(j + 1) * E].view(T, H, hd).transpose(0, 1) for j in range(3))
        s = (q @ k.transpose(1, 2)) / math.sqrt(hd)
        s.masked_fill_(mask, float("-inf"))
        w = torch.softmax(s, dim=-1)
        kept.append(w)
        ctx = (w @ v).transpose(0, 1).reshape(T, E)
        x = x + torch.addmm(p[h + "attn.c_proj.bias"], ctx, p[h + "attn.c_proj.weight"])
        m = torch.nn.functional.layer_norm(x, (E,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps)
        m = torch.nn.functional.gelu(torch.addmm(p[h + "mlp.c_fc.bias"], m, p[h + "mlp.c_fc.weight"]), approximate="tanh")
        x = x + torch.addmm(p[h + "mlp.c_proj.bias"], m, p[h + "mlp.c_proj.weight"])
    last = torch.nn.functional.layer_norm(x[-1:], (E,), p["ln_f.weight"], p["ln_f.bias"], eps)
    return kept, last @ p.get("lm_head.weight", p["wte.weight"]).t()


def torch_ms(p, cfg, ids, repeat):
    with torch.no_grad():
        for _ in range(2):
            forward(p, cfg, ids)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            forward(p, cfg, ids)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def mhaviz(binary, folder, tokens, repeat, backend, edit_at=None):
    """`mhaviz bench --model`'s keys (median_ms, gflops, peak_rss_mib, and read_once_ms where
    it reports it) as floats, plus "gflop" (its FLOPs a run) and "backend" (its products')."""
    cmd = [binary, "bench", "--model", folder, "--tokens", str(tokens), "--repeat", str(repeat), "--backend", backend]
    if edit_at is not None:
        cmd += ["--edit-at", str(edit_at)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    keys = {k: float(v) for k, v in re.findall(r"\b(\w+_ms|gflops|peak_rss_mib)=([0-9.]+)", out)}
    keys["gflop"] = float(re.search(r"([0-9.]+) GFLOP per run", out).group(1))
    keys["backend"] = re.search(r"products in (\w+)", out).group(1)
    return keys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mhaviz")
    ap.add_argument("model")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; the median of round medians is reported")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--backend", default="auto", help="mhaviz's backend (auto, avx512, openblas, ...)")
    args = ap.parse_args()
    p, cfg = load(args.model)
    T = args.tokens
    ids = torch.randint(0, cfg["vocab_size"], (T,), generator=torch.Generator().manual_seed(0))
    size_mib = os.path.getsize(os.path.join(args.model, "model.safetensors")) / 2**20
    products = forward_products(cfg, T)
    flops = sum(x[4] for x in products)
    print(f"the forward's products at T = {T} (2·m·k·n FLOPs each), its floor's numerator:")
    print("\n".join(describe(products)))
    theirs, full, edit, read_once, rss, best = {1: [], 2: []}, [], [], [], 0.0, 0.0
    for r in range(args.rounds):  # alternate so both see the same machine noise
        for n in theirs:
            torch.set_num_threads(n)
            theirs[n].append(torch_ms(p, cfg, ids, args.repeat))
        ours = mhaviz(args.mhaviz, args.model, T, args.repeat, args.backend)
        full.append(ours["median_ms"])
        rss = max(rss, ours["peak_rss_mib"])
        sgemm = sgemm_peak_gflops(peak_shapes(products))
        best = max(best, sgemm)
        e = mhaviz(args.mhaviz, args.model, T, args.repeat, args.backend, edit_at=T - 1)
        edit.append(e["median_ms"])
        once = "(no read_once_ms from this mhaviz)"
        if "read_once_ms" in e:
            read_once.append(e["read_once_ms"])
            once = f"read once {read_once[-1]:.2f} ms, edit / read-once {edit[-1] / read_once[-1]:.2f}"
        print(f"round {r + 1}: torch {min(theirs[1][-1], theirs[2][-1]):.2f} ms, mhaviz {full[-1]:.2f} ms; "
              f"SGEMM {sgemm:.0f} GFLOP/s (best {best:.0f}), floor {flops / best / 1e6:.2f} ms, "
              f"mhaviz / floor {full[-1] * best * 1e6 / flops:.2f}; "
              f"edit at T-1 {edit[-1]:.2f} ms, {once}")
    threads, t = min(((n, statistics.median(v)) for n, v in theirs.items()), key=lambda x: x[1])
    f, e, fl = statistics.median(full), statistics.median(edit), flops / best / 1e6
    print(f"torch {torch.__version__} vs mhaviz ({ours['backend']}): {cfg['n_layer']} layers, {cfg['n_head']} heads, "
          f"{cfg.get('n_embd')} wide, vocab {cfg['vocab_size']}, T = {T}; median of {args.rounds} alternating rounds; "
          f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', 'default')}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'auto')}")
    print(f"full forward      torch {t:8.2f} ms ({threads} thread{'s' if threads > 1 else ''})   mhaviz {f:8.2f} ms "
          f"({flops / f / 1e6:.0f} GFLOP/s)   ratio {f / t:.2f}")
    print(f"floor             {fl:8.2f} ms ({flops / 1e9:.3f} GFLOP at {best:.0f} GFLOP/s; mhaviz counts "
          f"{ours['gflop']:.3f} GFLOP)   mhaviz / floor {f / fl:.2f}")
    once = f"   read once {statistics.median(read_once):.2f} ms, edit / read-once " \
        f"{statistics.median(x / y for x, y in zip(edit, read_once)):.2f}" if read_once else ""
    print(f"edit at T-1       mhaviz {e:8.2f} ms   = {e / f:.3f} of mhaviz's full forward{once}")
    print(f"peak RSS          mhaviz {rss:8.1f} MiB   checkpoint {size_mib:.1f} MiB   + {rss - size_mib:.1f} MiB")
    print(f"load average      {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
