"""The walkthrough panel (issue 4) as a user sees it, under Xvfb.

- Every step of every variant renders (cells drawn, head colours in the capture where
  cells are coloured by head), middle frames of the view / transpose animations differ
  from both of their endpoints.
- The "common mistake" merge outlines the cells that differ from the correct merge.
- GPT-2 sizes (T = 256, d = 768, 12 heads) draw a window of cells, not millions (the UI
  build time is printed as a figure).
- The keys Right, Left and Space and the Next button move through the steps.
- The Compare variants tab's two parts, chosen by their radio buttons.

Captures are kept in $MHAVIZ_WALK_SHOTS when it is set (to look at them).

usage (under xvfb-run): test_gui_walkthrough.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import os
import shutil
import sys

import guitest as g

tmp = g.setup(sys.argv)
KEEP = os.environ.get("MHAVIZ_WALK_SHOTS")
if KEEP:
    os.makedirs(KEEP, exist_ok=True)

BLUE = (78, 121, 167)    # head 0
ORANGE = (242, 142, 43)  # head 1
RED = (255, 60, 50)      # cells of the mistaken merge that differ from the correct one

STEPS = {
    "seed003-weight-split-6d": ["input", "project", "view", "transpose", "scores", "mask", "softmax", "dropout",
                                "context", "transpose_back", "merge", "out_proj"],
    "seed003-wrapper": ["input", "project", "scores", "mask", "softmax", "dropout", "context", "concat"],
    "seed002-fused-qkv-encoder": ["input", "project", "view", "transpose", "chunk", "scores", "mask", "softmax",
                                  "dropout", "context", "transpose_back", "merge", "out_proj"],
}
# Steps whose cells are coloured by head (full-strength head colours appear).
HEAD_COLOURED = {"project", "view", "transpose", "chunk", "context", "transpose_back", "merge", "concat"}


def capture(name, session, spec, extra=(), frames=8):
    png = os.path.join(tmp, name + ".png")
    state = os.path.join(tmp, name + ".state.json")
    args = ["gui", session, "--exit-after-frames", str(frames), "--check-gl", "--no-restore", "--ignore-mouse",
            "--width", "1280", "--height", "800", "--config-dir", png + ".cfg", "--state-dir", png + ".st",
            "--walkthrough", spec, "--screenshot", png, "--state-out", state] + list(extra)
    r = g.run(args)
    if not g.check(r.returncode == 0, "%s: exit 0 (%s)" % (name, r.stderr.strip()[-200:])):
        return None, None, r
    if KEEP:
        shutil.copy(png, os.path.join(KEEP, name + ".png"))
    return png, g.read_json(state), r


def colours(png, x0=420):
    """Set of colours of the right-hand panel (every 2nd pixel)."""
    w, h, pixel = g.read_png(png)
    seen = set()
    for y in range(0, h, 2):
        for x in range(x0, w, 2):
            seen.add(pixel(x, y))
    return seen


def sample(png, x0=420):
    w, h, pixel = g.read_png(png)
    return [pixel(x, y) for y in range(150, h - 150, 7) for x in range(x0, w - 260, 7)]


# [1] Every step of every variant.
for lesson, steps in STEPS.items():
    for i, step in enumerate(steps):
        png, st, _ = capture("%s-%02d-%s" % (lesson, i + 1, step), lesson, step)
        if st is None:
            continue
        ws = st.get("walk")
        g.check(ws is not None and abs(ws["pos"] - i) < 1e-6, "%s %s: shown at step %d (%s)" % (lesson, step, i + 1, ws and ws["pos"]))
        g.check(ws is not None and 0 < ws["cells"] < 5000, "%s %s: cells drawn (%s)" % (lesson, step, ws and ws["cells"]))
        if step in HEAD_COLOURED:
            c = colours(png)
            g.check(BLUE in c and ORANGE in c, "%s %s: head 0 and head 1 colours in the capture" % (lesson, step))

# [2] Middle frames: elements on their way, different from both endpoints.
for lesson, a, b in [("seed003-weight-split-6d", "view", "transpose"), ("journey-dropout-half", "project", "view"),
                     ("seed003-weight-split-6d", "context", "transpose_back"),
                     ("seed002-fused-qkv-encoder", "transpose", "chunk")]:
    p0, s0, _ = capture("mid-%s-%s-0" % (lesson, a), lesson, a)
    pm, sm, _ = capture("mid-%s-%s-half" % (lesson, a), lesson, a + "+0.5")
    p1, s1, _ = capture("mid-%s-%s-1" % (lesson, a), lesson, b)
    if p0 and pm and p1:
        g.check(sm["walk"]["cells"] > 0, "%s %s+0.5: cells drawn mid-animation" % (lesson, a))
        m = sample(pm)
        g.check(m != sample(p0) and m != sample(p1), "%s %s+0.5: middle frame differs from both ends" % (lesson, a))

# [3] The common mistake: red outlines on the scrambled cells, none on the correct merge.
pw, sw, _ = capture("mistake-merge", "journey-dropout-half", "merge,mistake")
pc, sc, _ = capture("correct-merge", "journey-dropout-half", "merge")
if pw and pc:
    g.check(RED in colours(pw), "mistaken merge: cells that differ are outlined in red")
    g.check(RED not in colours(pc), "correct merge: no red outlines")
    g.check(sw["walk"]["pos"] == 9.0, "mistake: merge follows context directly (step 10 of 11)")

# [4] GPT-2 sizes: a window of cells.
gpt = os.path.join(tmp, "gpt2.json")
T, D = 256, 768
emb = [[round(((i * 7 + j * 13) % 200) / 100.0 - 1.0, 2) for j in range(D)] for i in range(T)]
with open(gpt, "w") as f:
    json.dump({"format": "mhaviz-session", "version": 1, "tokens": ["tok%d" % i for i in range(T)], "embeddings": emb,
               "batch": 1, "model": {"variant": "weight_split", "d_out": D, "num_heads": 12, "context_length": 1024,
                                     "dropout": 0.1, "qkv_bias": True, "causal": True, "seed": 123, "training": True}}, f)
for spec in ["project", "view+0.5", "transpose", "softmax", "merge,mistake"]:
    png, st, r = capture("gpt2-" + spec.replace(",", "-"), gpt, spec, extra=["--frame-stats"], frames=40)
    if st is None:
        continue
    cells = st["walk"]["cells"]
    g.check(0 < cells < 3000, "GPT-2 %s: a window of cells is drawn (%d)" % (spec, cells))
    # A figure to read, not a pass/fail timing: frame times depend on the machine's load.
    ui = [l for l in r.stdout.splitlines() if l.startswith("median_ms:")]
    print("GPT-2 %s: %s" % (spec, ui[0] if ui else "no frame stats"))

# [5] Keys and buttons. Keys are pressed and released with no pause between (the app's
# input queue shows each press to ImGui in a frame of its own).
layout = os.path.join(tmp, "keys-layout.json")
proc = g.start(["gui", "seed003-weight-split-6d", "--no-restore", "--width", "1280", "--height", "800",
                "--config-dir", layout + ".cfg", "--state-dir", layout + ".st", "--walkthrough", "input",
                "--layout-out", layout])
try:
    w = g.wait_for_layout(layout, ["walk_next", "walk_play"], proc=proc)
    g.focus_window()

    def state_when(pred, what):
        ws = g.wait_state(layout, what, lambda j: pred(j["walk"]), proc)["walk"]
        return g.check(True, what), ws

    g.xdo("mousemove", 5, 790)  # away from the cells
    g.key("Right")
    state_when(lambda s: s["target"] == 1.0 and s["pos"] == 1.0, "Right: animates to step 2 and stops there")
    g.key("Right")
    state_when(lambda s: s["pos"] == 2.0, "Right again: step 3")
    g.key("Left")
    state_when(lambda s: s["target"] == 1.0 and s["pos"] == 1.0, "Left: back to step 2")
    g.click(*g.center(w["walk_next"]))
    state_when(lambda s: s["pos"] == 2.0, "Next button: step 3")
    g.key("space")
    state_when(lambda s: s["playing"], "Space: playing")
    state_when(lambda s: s["pos"] > 2.0, "playing: moves on by itself")
    g.key("space")
    _, ws = state_when(lambda s: not s["playing"] and s["pos"] == s["target"], "Space again: paused on a whole step")
    # Three strokes in one burst, each key released as soon as it is pressed: ImGui 1.86 alone
    # sees a key only when it is down as a frame starts, and saw none of them. (30 ms between
    # strokes: GLFW on X11 drops a press of a key in the same millisecond as its last one, and
    # reads a release followed within 20 ms by a press of the same key as X's autorepeat.)
    start = ws["target"]
    stroke = ["key", "--delay", 0, "Right"]
    g.xdo(*stroke, "sleep", 0.03, *stroke, "sleep", 0.03, *stroke)
    state_when(lambda s: s["target"] == start + 3 and s["pos"] == start + 3,
               "three Right strokes in one burst: three steps on, from step %d to %d" % (start + 1, start + 4))
finally:
    rc, out, err = g.stop(proc)
    g.check(rc == 0, "keys: app exits cleanly (%s)" % err.strip()[-200:])

# [6] The Compare variants tab: its two parts by their radio buttons, each the centre's figure,
# the variants' figures in the state as the panel draws them.
layout = os.path.join(tmp, "compare-layout.json")
state = os.path.join(tmp, "compare-state.json")
proc = g.start(["gui", "seed003-weight-split-6d", "--no-restore", "--width", "1280", "--height", "800",
                "--config-dir", layout + ".cfg", "--state-dir", layout + ".st", "--walkthrough", "1,compare",
                "--layout-out", layout, "--state-out", state])
try:
    g.wait_for_layout(layout, ["cmp_wrapper", "cmp_variants"], proc=proc)
    g.focus_window()
    j = g.wait_state(state, "the wrapper vs weight split part drawn",
                     lambda j: j["figure"] and j["figure"]["name"] == "compare", proc)
    g.check(j["compare"]["part"] == "wrapper", "compare: opens on wrapper vs weight split")
    g.click_widget(layout, state, "cmp_variants", proc)
    j = g.wait_state(state, "the variants part drawn",
                     lambda j: j["figure"] and j["figure"]["name"] == "variants" and j["compare"]["valid"], proc)
    c = j["compare"]
    g.check(c["part"] == "variants" and [r["variant"] for r in c["costs"]] == ["MHA", "GQA", "MQA", "MLA", "SWA"],
            "compare: its radio button shows the variants, a cost row each (%s)" % [r["variant"] for r in c["costs"]])
    # 2 heads of head_dim 3: RoPE cannot rotate an odd head_dim, and the state says why.
    g.check(not any(e["claim"].startswith("RoPE") for e in c["equivalences"]) and
            any("head_dim 3 is odd" in n for n in c["notes"]), "compare: no RoPE pair for head_dim 3, and why")
    # Its text prims in order (a verdict too long for its line goes on in the next ones).
    texts = " ".join(p["text"] for p in j["figure"]["display_list"]["prims"] if p["kind"] == "text")
    g.check(c["equivalences"] and all(e["verdict"] in texts for e in c["equivalences"]),
            "compare: the figure says each verdict (%s)" % [e["verdict"] for e in c["equivalences"]])
    g.click_widget(layout, state, "cmp_wrapper", proc)
    g.wait_state(state, "back to wrapper vs weight split",
                 lambda j: j["figure"] and j["figure"]["name"] == "compare" and j["compare"]["part"] == "wrapper", proc)
finally:
    rc, out, err = g.stop(proc)
    g.check(rc == 0, "compare: app exits cleanly (%s)" % err.strip()[-200:])

g.finish()
