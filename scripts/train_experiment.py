#!/usr/bin/env python3
"""Summary of the induction experiment's runs (scripts/train_experiment.sh): which reached the
criteria, when, and the loss curves as CSV.

    train_experiment.py OUT_DIR

Reads every OUT_DIR/L{layers}-seed{seed}.jsonl that `mhaviz train --log` wrote. A run meets the
criteria at the first probe (--eval-every) where, on the held-out segment lengths (5, 9, 13),
the loss on the copy is at most 10% of the loss on the first occurrence and some head of layer
1 has an induction score of at least 0.5. Writes OUT_DIR/summary.json and OUT_DIR/curves.csv
(step, run, loss, loss_first, loss_repeat, the probe's losses and best induction score where
measured). Standard library only.
"""
import csv
import glob
import json
import os
import re
import sys


def best(heads, pattern, layer=None):
    """(score, "layer.head") of the highest score of a pattern, in one layer or in all."""
    top = (-1.0, "-")
    for l, row in enumerate(heads[pattern]):
        if layer is not None and l != layer:
            continue
        for h, s in enumerate(row):
            if s is not None and s > top[0]:
                top = (s, f"{l}.{h}")
    return top


def summarize(path):
    with open(path) as f:
        log = [json.loads(line) for line in f if line.strip()]
    layers = len(next(line for line in log if "eval" in line)["eval"]["heads"]["induction"])
    met, last = None, None
    for line in log:
        e = line.get("eval")
        if not e:
            continue
        ratio = e["loss_repeat"] / e["loss_first"]
        induction = best(e["heads"], "induction", 1 if layers > 1 else None)
        last = {"step": line["step"], "seconds": line["seconds"], "ratio": ratio, "induction": induction,
                "previous_token_layer0": best(e["heads"], "previous-token", 0),
                "duplicate_token_layer0": best(e["heads"], "duplicate-token", 0)}
        if met is None and layers > 1 and ratio <= 0.1 and induction[0] >= 0.5:
            met = {"step": line["step"], "seconds": line["seconds"]}
    return {"layers": layers, "steps": log[-1]["step"], "seconds": log[-1]["seconds"], "met": met, "last": last}, log


def main():
    out = sys.argv[1]
    runs = {}
    with open(os.path.join(out, "curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "step", "loss", "loss_first", "loss_repeat", "probe_loss_first", "probe_loss_repeat",
                    "probe_best_induction"])
        for path in sorted(glob.glob(os.path.join(out, "L*-seed*.jsonl"))):
            name = os.path.basename(path)[:-len(".jsonl")]
            runs[name], log = summarize(path)
            for line in log:
                e = line.get("eval", {})
                w.writerow([name, line["step"], line["loss"], line.get("loss_first"), line.get("loss_repeat"),
                            e.get("loss_first", ""), e.get("loss_repeat", ""),
                            best(e["heads"], "induction")[0] if e else ""])
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(runs, f, indent=1)
    print(f"{'run':12} {'criteria met':>22} {'steps':>6} {'seconds':>8} {'repeat/first':>13} "
          f"{'best induction':>16} {'L0 previous-token':>18} {'L0 duplicate':>13}")
    for name, r in sorted(runs.items(), key=lambda kv: (-kv[1]["layers"], int(re.search(r"seed(\d+)", kv[0]).group(1)))):
        met = f"step {r['met']['step']} ({r['met']['seconds']:.1f} s)" if r["met"] else "never"
        last = r["last"]
        print(f"{name:12} {met:>22} {r['steps']:>6} {r['seconds']:>8.1f} {last['ratio']:>13.3f} "
              f"{last['induction'][1]:>6} {last['induction'][0]:.2f}    "
              f"{last['previous_token_layer0'][1]:>6} {last['previous_token_layer0'][0]:.2f}    "
              f"{last['duplicate_token_layer0'][1]:>4} {last['duplicate_token_layer0'][0]:.2f}")
    two = [r for r in runs.values() if r["layers"] == 2]
    one = [r for r in runs.values() if r["layers"] == 1]
    ok = all(r["met"] for r in two) and not any(r["last"]["ratio"] <= 0.1 for r in one)
    print(f"2-layer runs meeting the criteria: {sum(1 for r in two if r['met'])} of {len(two)}; 1-layer runs with the "
          f"copy's loss at most 10% of the first's at the end: {sum(1 for r in one if r['last']['ratio'] <= 0.1)} of {len(one)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
