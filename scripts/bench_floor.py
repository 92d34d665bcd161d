#!/usr/bin/python3
"""A forward's floor: the time it would take if every product ran at the SGEMM peak torch.mm
reaches on this machine, in this run, and nothing else (norms, softmax, copies, thread
hand-offs) took any time. No code on the machine goes below it; the bench scripts print each
forward's time over it (the project's goal: at most 1.25).

    bench_floor.py MODEL_DIR [--tokens 256] [--repeat 5] [--quiet]

MODEL_DIR's config.json is a GPT-2 one (n_layer, n_embd, n_head) or a Qwen3, Qwen2, Llama or
Gemma 3 one. The script prints the forward's products, each product's FLOPs counted as
2·m·k·n (a table a reader can check against the shapes), then measures the SGEMM peak in this
process and ends with one line of keys: `gflop=G sgemm_gflops=S floor_ms=F`.
scripts/bench_vs_torch.py and bench_gpt_vs_torch.py import sgemm_peak_gflops (which measures
in a child process) and forward_products; scripts/bench_qwen3_vs_torch.sh runs this file.

The products are those the forward keeps as mhaviz computes it: every layer's projections,
q·kᵀ over the causal half (key j < i + 1 for query i; min(i + 1, W) keys on a layer with a
sliding window of W), weights·v over the same keys, the MLP, and the LM head for the one row
whose logits mhaviz computes (the last). The peak is the best of torch.mm's rates (median of
--repeat runs each) on the forward's own T-row product shapes and on a 2048³ product.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SQUARE = (2048, 2048, 2048)


# [SECTION] the SGEMM peak

def sgemm_peak_here(shapes, repeat):
    """GFLOP/s: the best over `shapes` (and 2048³) of torch.mm's median rate on an m×k by k×n
    product, in this process, after two warm-up products each."""
    import torch
    best = 0.0
    for m, k, n in dict.fromkeys([*shapes, SQUARE]):
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


def sgemm_peak_gflops(shapes, repeat=5):
    """sgemm_peak_here in a child process: freeing the large operands in the caller would raise
    glibc's mmap threshold and spare the caller's own torch forward the page faults it otherwise
    pays. The child inherits the environment (ATEN_CPU_CAPABILITY, OPENBLAS_CORETYPE)."""
    args = [f"{m},{k},{n}" for m, k, n in shapes]
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--sgemm-peak", "--repeat", str(repeat), *args],
                         check=True, capture_output=True, text=True).stdout
    return float(out)


# [SECTION] the forward's products

def forward_products(config, T):
    """config.json (a dict) and T tokens -> [(what, shape, per_layer, layers, flops)], in order:
    shape is (m, k, n) for an m×k by k×n product (flops = 2·m·k·n · layers) and None for the
    attention products, whose rows see different numbers of keys (shape then says so in words).
    per_layer is True for the blocks' products (counted over `layers` layers)."""
    if "n_layer" in config:  # GPT-2: Conv1D weights [in, out], MLP 4E wide, tied LM head
        L, E, H, V = config["n_layer"], config["n_embd"], config["n_head"], config["vocab_size"]
        hd, keys = E // H, T * (T + 1) // 2
        attn = 2 * H * keys * hd * L
        return [("c_attn (q | k | v)", (T, E, 3 * E), True, L, 2 * T * E * 3 * E * L),
                ("q·kᵀ, causal half", f"{H} heads × {keys} (query, key) pairs × {hd}", True, L, attn),
                ("weights·v, causal half", f"{H} heads × {keys} (query, key) pairs × {hd}", True, L, attn),
                ("attn.c_proj", (T, E, E), True, L, 2 * T * E * E * L),
                ("mlp.c_fc", (T, E, 4 * E), True, L, 2 * T * E * 4 * E * L),
                ("mlp.c_proj", (T, 4 * E, E), True, L, 2 * T * 4 * E * E * L),
                ("LM head, last row", (1, E, V), False, 1, 2 * E * V)]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
    from hf_reference import arch_of  # the reference's reading of sliding layers and head_dim
    a = arch_of(config)
    L, E, H, K, hd, I, V = (a["n_layers"], a["emb_dim"], a["n_heads"], a["n_kv_heads"], a["head_dim"], a["hidden_dim"],
                            a["vocab_size"])
    full = T * (T + 1) // 2
    windowed = sum(min(i + 1, a["window"]) for i in range(T)) if any(a["sliding"]) else full
    pairs = sum(windowed if s else full for s in a["sliding"])  # (query, key) pairs over all layers, a head
    seen = f"{H} heads × {full} (query, key) pairs × {hd}"
    if any(a["sliding"]):
        seen += f" ({windowed} on the {sum(a['sliding'])} layers with a window of {a['window']})"
    attn = 2 * H * pairs * hd
    return [("q_proj", (T, E, H * hd), True, L, 2 * T * E * H * hd * L),
            ("k_proj", (T, E, K * hd), True, L, 2 * T * E * K * hd * L),
            ("v_proj", (T, E, K * hd), True, L, 2 * T * E * K * hd * L),
            ("q·kᵀ, causal half", seen, True, L, attn),
            ("weights·v, causal half", seen, True, L, attn),
            ("o_proj", (T, H * hd, E), True, L, 2 * T * H * hd * E * L),
            ("mlp.gate_proj", (T, E, I), True, L, 2 * T * E * I * L),
            ("mlp.up_proj", (T, E, I), True, L, 2 * T * E * I * L),
            ("mlp.down_proj", (T, I, E), True, L, 2 * T * I * E * L),
            ("LM head, last row", (1, E, V), False, 1, 2 * E * V)]


def peak_shapes(products):
    """The T-row product shapes, once each (the LM head's one row is a matrix-vector product,
    bound by memory, not a shape SGEMM peaks on)."""
    return list(dict.fromkeys(s for _, s, per_layer, _, _ in products if isinstance(s, tuple) and per_layer))


def describe(products):
    """The products as lines of a table: what, shape, layers, GFLOP; then the total."""
    lines = []
    for what, shape, per_layer, layers, flops in products:
        s = f"{shape[0]} × {shape[1]} @ {shape[1]} × {shape[2]}" if isinstance(shape, tuple) else shape
        lines.append(f"  {what:<24} {s:<62} {'× ' + str(layers) + ' layers' if per_layer else '':<12} "
                     f"{flops / 1e9:10.3f} GFLOP")
    lines.append(f"  {'total':<24} {'':<62} {'':<12} {sum(p[4] for p in products) / 1e9:10.3f} GFLOP")
    return lines


def main():
    ap = argparse.ArgumentParser(description="a forward's floor: its products' FLOPs at this run's SGEMM peak")
    ap.add_argument("model", help="a folder with config.json (GPT-2, Qwen3, Qwen2, Llama or Gemma 3)")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5, help="timed torch.mm runs a shape (after 2 warm-up runs)")
    ap.add_argument("--quiet", action="store_true", help="print only the line of keys")
    a = ap.parse_args()
    with open(os.path.join(a.model, "config.json")) as f:
        config = json.load(f)
    products = forward_products(config, a.tokens)
    flops = sum(p[4] for p in products)
    if not a.quiet:
        print(f"the forward's products at T = {a.tokens} (2·m·k·n FLOPs each):")
        print("\n".join(describe(products)))
    sgemm = sgemm_peak_here(peak_shapes(products), a.repeat)
    print(f"gflop={flops / 1e9:.3f} sgemm_gflops={sgemm:.1f} floor_ms={flops / sgemm / 1e6:.2f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--sgemm-peak" and sys.argv[2] == "--repeat":
        print(sgemm_peak_here([tuple(map(int, s.split(","))) for s in sys.argv[4:]], int(sys.argv[3])))
    else:
        sys.exit(main())
