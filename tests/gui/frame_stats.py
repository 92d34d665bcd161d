"""Frame-time figures of the desktop app under Xvfb/llvmpipe (issue 3's targets).

Runs `mhaviz gui SESSION --frame-stats --exit-after-frames N` in three configurations,
interleaved so that background load hits them alike, and prints the medians and ratios:
  baseline   --no-heatmaps            (the same window showing no heatmaps)
  unchanged  (heatmaps, input fixed)  target: median <= 2x baseline
  perturbed  --perturb                target: median <= 3x baseline (recompute + upload every frame)

usage (under xvfb-run -a -s "-screen 0 1280x800x24"):
  frame_stats.py PATH/TO/mhaviz [SESSION=gpt2-small-256] [FRAMES=300] [ROUNDS=3]
Exit status 1 when a target is missed (the figures are noisy on a loaded machine).
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

mhaviz = sys.argv[1]
session = sys.argv[2] if len(sys.argv) > 2 else "gpt2-small-256"
frames = sys.argv[3] if len(sys.argv) > 3 else "300"
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
tmp = tempfile.mkdtemp(prefix="mhaviz-frames-")
configs = {"baseline": ["--no-heatmaps"], "unchanged": [], "perturbed": ["--perturb"]}
results = {k: [] for k in configs}
for _ in range(rounds):
    for name, extra in configs.items():
        cmd = [mhaviz, "gui", session, "--frame-stats", "--exit-after-frames", frames, "--width", "1280",
               "--height", "800", "--config-dir", os.path.join(tmp, "cfg"), "--state-dir", os.path.join(tmp, "st")]
        out = subprocess.run(cmd + extra, capture_output=True, text=True, check=True).stdout.strip().splitlines()
        m = re.fullmatch(r"frame_median_ms=([0-9.]+) frame_p95_ms=([0-9.]+)", out[-1])
        results[name].append((float(m.group(1)), float(m.group(2))))
        print("%-9s %s | %s" % (name, out[-1], out[-2] if len(out) > 1 else ""), flush=True)
med = {k: statistics.median(v[0] for v in vals) for k, vals in results.items()}
p95 = {k: statistics.median(v[1] for v in vals) for k, vals in results.items()}
for k in configs:
    print("%-9s median of medians %.2f ms, p95 %.2f ms, %.2fx baseline" % (k, med[k], p95[k], med[k] / med["baseline"]))
ok = med["unchanged"] <= 2 * med["baseline"] and med["perturbed"] <= 3 * med["baseline"]
print("targets (unchanged <= 2x, perturbed <= 3x): %s" % ("met" if ok else "MISSED"))
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(0 if ok else 1)
