"""The app starts on each built-in lesson, renders frames with GL errors checked
(--check-gl: any glGetError is fatal), and exits 0; without a display it says so in one
line and exits 2; --frame-stats prints its figures as the last line.

usage (under xvfb-run): test_gui_lessons.py PATH/TO/mhaviz
"""
import os
import re
import subprocess
import sys

import guitest as g

tmp = g.setup(sys.argv)
common = ["--config-dir", os.path.join(tmp, "cfg"), "--state-dir", os.path.join(tmp, "st"), "--check-gl",
          "--width", "1280", "--height", "800"]

names = [line.split()[0] for line in subprocess.run([g.MHAVIZ, "lessons"], capture_output=True, text=True,
                                                    check=True).stdout.splitlines() if line.strip()]
g.check(len(names) >= 5 and names[0] == "seed003-wrapper", "lessons listed, default first: %s" % names)
for name in names:
    for stage in ("weights", "scores", "dropped"):
        state = os.path.join(tmp, "%s-%s.json" % (name, stage))
        r = g.run(["gui", name, "--exit-after-frames", "12", "--stage", stage, "--state-out", state] + common,
                  timeout=300)
        ok = g.check(r.returncode == 0, "%s (%s): 12 frames, exit 0 (got %d: %s)" % (name, stage, r.returncode,
                                                                                     r.stderr.strip()[-300:]))
        if ok:
            st = g.read_json(state)
            g.check(st["frames"] == 12 and st["gl_errors"] == 0 and st["have_trace"] and st["error"] == "",
                    "%s (%s): trace computed, no GL error" % (name, stage))
            g.check(st["trace_heads"] == st["session"]["model"]["num_heads"], "%s: one heatmap per head" % name)

# The default: no session argument and no autosave -> the seed-003 lesson.
state = os.path.join(tmp, "default.json")
r = g.run(["gui", "--exit-after-frames", "5", "--state-out", state, "--no-restore"] + common)
st = g.read_json(state)
g.check(st["origin"] == "lesson seed003-wrapper", "default lesson is seed003-wrapper")
g.check(st["shapes"]["output"] == [2, 6, 4], "default output shape (2, 6, 4): %s" % st["shapes"]["output"])

# Parameter count shown for GPT-2 small (weight_split 768/768/12 heads, no bias).
state = os.path.join(tmp, "gpt2.json")
r = g.run(["gui", "gpt2-small-256", "--exit-after-frames", "5", "--state-out", state] + common, timeout=300)
st = g.read_json(state)
g.check(st["parameters"] == 2360064, "GPT-2 small: 2,360,064 parameters (got %s)" % st["parameters"])

# --state-out while the app runs: written as frames come, its session (256 x 768 values here)
# made once for the document, not once a write; on exit the same session, a later frame.
state = os.path.join(tmp, "live.json")
proc = g.start(["gui", "gpt2-small-256", "--state-out", state, "--no-restore"] + common)
try:
    early = g.wait_frames(state, 3, proc)
    late = g.wait_frames(state, 10, proc)
    g.check(late["frames"] >= early["frames"] + 10 and proc.poll() is None,
            "the state is written while the app runs (frame %d, then %d)" % (early["frames"], late["frames"]))
    g.check(late["session_builds"] == early["session_builds"] and len(late["session"]["embeddings"]) == 256,
            "its 256 x 768 session is made once, not at each write (%d, then %d times)" %
            (early["session_builds"], late["session_builds"]))
finally:
    rc, out, err = g.stop(proc)
st = g.read_json(state)
g.check(rc == 0 and st["session"] == late["session"] and st["frames"] >= late["frames"],
        "on exit: the same session, frame %d (status %d)" % (st["frames"], rc))

# No display: one line, exit 2.
env = dict(os.environ)
env.pop("DISPLAY", None)
env.pop("WAYLAND_DISPLAY", None)
r = subprocess.run([g.MHAVIZ, "gui", "--no-restore"] + common, capture_output=True, text=True, env=env, timeout=60)
lines = r.stderr.strip().splitlines()
g.check(r.returncode == 2, "no display: exit 2 (got %d)" % r.returncode)
g.check(len(lines) == 1 and all(w in lines[0] for w in ("DISPLAY", "xvfb-run", "mhaviz render")),
        "no display: one line naming the remedy: %s" % lines)

# A session that does not exist: one line, exit 2 (bad input, as in dump), no window needed.
r = g.run(["gui", os.path.join(tmp, "missing.json")] + common)
g.check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, "missing session: one line, exit 2")

# Recompute once per change, re-upload only what changed: with a fixed input the trace is
# computed once and each head's texture uploaded once; with --perturb (one input value
# changes every frame) once per frame each.
state = os.path.join(tmp, "fixed.json")
r = g.run(["gui", "seed003-wrapper", "--exit-after-frames", "30", "--state-out", state, "--no-restore"] + common)
st = g.read_json(state)
g.check(st["forwards"] == 1 and st["texture_uploads"] == 2,
        "fixed input: 1 forward, 2 uploads in 30 frames (got %d, %d)" % (st["forwards"], st["texture_uploads"]))
state = os.path.join(tmp, "perturbed.json")
r = g.run(["gui", "seed003-wrapper", "--exit-after-frames", "30", "--perturb", "--state-out", state, "--no-restore"]
          + common)
st = g.read_json(state)
g.check(st["forwards"] == 31 and st["texture_uploads"] == 60,
        "perturbed input: 1 + 30 forwards (load, then one per frame), 60 uploads in 30 frames (got %d, %d)" %
        (st["forwards"], st["texture_uploads"]))

# --frame-stats: the last line has the figures.
r = g.run(["gui", "seed003-wrapper", "--frame-stats", "--exit-after-frames", "30", "--perturb"] + common)
last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
g.check(r.returncode == 0 and re.fullmatch(r"frame_median_ms=[0-9.]+ frame_p95_ms=[0-9.]+", last) is not None,
        "--frame-stats last line: %r" % last)
g.finish()
