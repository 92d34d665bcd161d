#!/usr/bin/python3
"""The book's Qwen3Model forward in PyTorch on a Qwen3-0.6B-shaped checkpoint: the time mhaviz's
forward of the same checkpoint is to be compared with, measured on the same machine.

    make_modern_checkpoints.py --qwen3-0.6b DIR [--bf16]   (once: ~2.4 GB of random F32 weights, or ~1.2 GB of BF16)
    bench_qwen3_torch.py DIR [--tokens 256] [--repeat 5]

The model is hf_reference.DecoderModel, which follows the book's Qwen3Model module by module
(pkg/llms_from_scratch/qwen3.py: GroupedQueryAttention with QK-norm, split-half RoPE,
repeat_interleave, masked_fill(-inf), softmax; SiLU FeedForward; RMSNorm), in float32, its
weights viewing the memory-mapped file without a copy (tied LM head = the embedding); BF16
weights are widened to float32 once, on loading (so the peak RSS holds the widened copy).
The forward runs under torch.no_grad() on T random ids, every layer's attention weights
kept; the median of --repeat runs after one warm-up, with 1 and with 2 threads, and the best
of the two is the figure. Peak RSS is the process's maximum resident set (file pages
included).
"""
import argparse
import json
import mmap
import os
import resource
import statistics
import struct
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import DecoderModel, attach_state  # noqa: E402


def mapped_state(folder):
    """{name: float32 tensor viewing the file's pages, or widened from BF16}; the map stays
    open with the tensors."""
    path = os.path.join(folder, "model.safetensors")
    f = open(path, "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    n = struct.unpack("<Q", m[:8])[0]
    header = json.loads(m[8:8 + n])
    base = 8 + n
    state = {}
    warnings.filterwarnings("ignore", message="The given buffer is not writable")  # the weights are only read
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] in ("F32", "BF16"), f"{name}: {t['dtype']} (this benchmark reads F32 and BF16)"
        dtype, width = (torch.float32, 4) if t["dtype"] == "F32" else (torch.bfloat16, 2)
        b, e = t["data_offsets"]
        mapped = torch.frombuffer(m, dtype=dtype, count=(e - b) // width, offset=base + b)
        state[name] = mapped.to(torch.float32).reshape(t["shape"])  # no copy when F32
    return state, os.path.getsize(path)


def build(folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    state, size = mapped_state(folder)
    return attach_state(DecoderModel(config, device="meta"), state).eval(), config, size


def main():
    ap = argparse.ArgumentParser(description="time the book's Qwen3Model forward in torch")
    ap.add_argument("model", help="folder of make_modern_checkpoints.py --qwen3-0.6b")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    model, config, size = build(a.model)
    ids = torch.randint(0, config["vocab_size"], (1, a.tokens), generator=torch.Generator().manual_seed(1))
    times = {}
    with torch.no_grad():
        for threads in (1, 2):
            torch.set_num_threads(threads)
            model(ids)  # warm-up: pages of the file read, allocator primed
            runs = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                logits, weights = model(ids)
                runs.append((time.perf_counter() - t0) * 1000)
            times[threads] = runs
            print(f"{threads} thread{'s' if threads > 1 else ' '}: median {statistics.median(runs):8.1f} ms  "
                  f"(min {min(runs):.1f}, max {max(runs):.1f}, {a.repeat} runs)")
    best = min(times, key=lambda n: statistics.median(times[n]))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"torch {torch.__version__} Qwen3Model forward, T = {a.tokens}: {statistics.median(times[best]):.1f} ms "
          f"({best} thread{'s' if best > 1 else ''}); peak RSS {peak:.0f} MiB, checkpoint {size / 2**20:.0f} MiB; "
          f"logits {tuple(logits.shape)}, {len(weights)} layers of attention weights {tuple(weights[0].shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
