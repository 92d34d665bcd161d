#!/usr/bin/python3
"""`mhaviz train` against PyTorch training the same model on the same batches, timed in one run.

    bench_train_vs_torch.py MHAVIZ [--steps 500] [--rounds 3] [--backend auto|avx512|avx2|openblas]

The run is the induction experiment's default (2 layers x 4 heads, attention-only, d 64, vocab
64, 64 sequences of 32 tokens, AdamW lr 1e-2, weight decay 0.1). mhaviz writes the batches it
trains on (--dump-batches) and its initial parameters (--steps 0); torch, with autograd and
torch.optim.AdamW, starts from its own init for the same seed (equal to mhaviz's bit for bit)
and trains on those batches, in a fresh process per run: 1 and 2 threads in the first round, then
the faster of the two.
Times are of the steps alone: torch's loop after the model is built and the batches loaded;
mhaviz's training time as its log's last "seconds" (steps, batches drawn on the fly, no
probe: --eval-every 0). Rounds alternate the programs so both meet the same machine noise; the
medians are reported, with tokens/s and the ratio mhaviz / torch.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULTS = {"vocab_size": 64, "context_length": 32, "emb_dim": 64, "n_heads": 4, "n_layers": 2, "attn_only": True,
            "qkv_bias": False, "lr": 1e-2, "weight_decay": 0.1, "seed": 123}


def torch_child(batches_path, threads, steps):
    """Runs in a fresh process: seconds for `steps` steps of torch on the batches."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))
    from train_reference import build, loss_of
    torch.set_num_threads(threads)
    model = build(DEFAULTS)
    opt = torch.optim.AdamW(model.parameters(), lr=DEFAULTS["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=DEFAULTS["weight_decay"])
    batches = [torch.from_numpy(b) for b in np.load(batches_path)[:steps]]
    t0 = time.perf_counter()
    for b in batches:
        opt.zero_grad()
        loss = loss_of(model, b)
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


def torch_seconds(batches, threads, steps):
    r = subprocess.run([sys.executable, __file__, "--torch-child", batches, str(threads), str(steps)], capture_output=True,
                       text=True, check=True)
    return float(r.stdout.strip())


def mhaviz_seconds(mhaviz, steps, backend, tmp):
    log = os.path.join(tmp, "log.jsonl")
    r = subprocess.run([mhaviz, "train", "--steps", str(steps), "--eval-every", "0", "--quiet", "--backend", backend,
                        "--log", log, "-o", os.path.join(tmp, "m.safetensors")], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mhaviz train failed: {r.stderr}")
    with open(log) as f:
        return json.loads(f.readlines()[-1])["seconds"]


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--torch-child":
        print(torch_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("mhaviz")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args()
    tokens = args.steps * 64 * 32
    with tempfile.TemporaryDirectory() as tmp:
        batches = os.path.join(tmp, "batches.npy")
        subprocess.run([args.mhaviz, "train", "--steps", str(args.steps), "--eval-every", "0", "--quiet", "--dump-batches",
                        batches, "-o", os.path.join(tmp, "warm.safetensors")], check=True)
        theirs, mine = {1: [], 2: []}, []
        for r in range(args.rounds):
            # Both thread counts in the first round; then the faster one only (on a machine
            # shared with other work, torch's two OpenMP threads can take ten times as long).
            counts = list(theirs) if r == 0 else [min(theirs, key=lambda n: theirs[n][0])]
            for n in counts:
                theirs[n].append(torch_seconds(batches, n, args.steps))
            mine.append(mhaviz_seconds(args.mhaviz, args.steps, args.backend, tmp))
    threads, t = min(((n, statistics.median(v)) for n, v in theirs.items()), key=lambda x: x[1])
    m = statistics.median(mine)
    import torch
    print(f"{cpu_name()}; torch {torch.__version__}; {args.steps} steps of 64 x 32 tokens, median of {args.rounds} "
          f"alternating rounds")
    for n, v in theirs.items():
        print(f"torch, {n} thread{'s' if n > 1 else ' '}   {statistics.median(v):7.2f} s   "
              f"{tokens / statistics.median(v):9.0f} tokens/s   rounds {', '.join(f'{x:.2f}' for x in v)}")
    print(f"mhaviz ({args.backend:8s})  {m:7.2f} s   {tokens / m:9.0f} tokens/s   rounds {', '.join(f'{x:.2f}' for x in mine)}")
    print(f"ratio mhaviz / torch ({threads} thread{'s' if threads > 1 else ''}): {m / t:.3f}")


if __name__ == "__main__":
    main()
