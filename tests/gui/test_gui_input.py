"""Real input with xdotool: drag the num_heads and d_out sliders, type a token into the
token field, press stage and head keys; the state the app writes on exit must follow. The
stage key must change the drawn pixels: after key 1 every cell shows PyTorch's raw score
through the colormap, as a window opened on that stage does. A dropout typed past the
slider's range (Ctrl+click, 1) is clamped to a valid rate, never reaching the model as 1.

usage (under xvfb-run): test_gui_input.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import glob
import math
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
DATA = sys.argv[2]
session_path = os.path.join(DATA, "reference", "sessions", "seed003-weight-split-6d.json")
original = g.read_json(session_path)
layout = os.path.join(tmp, "layout.json")
state = os.path.join(tmp, "state.json")
proc = g.start(["gui", session_path, "--no-restore", "--check-gl", "--width", "1280", "--height", "800",
                "--config-dir", os.path.join(tmp, "cfg"), "--state-dir", os.path.join(tmp, "st"),
                "--layout-out", layout, "--state-out", state])
try:
    w = g.wait_for_layout(layout, ["d_out", "num_heads", "tokens"], proc=proc)
    g.focus_window()

    # num_heads: d_out 6 offers 1, 2, 3, 6; drag the slider to its right end -> 6 heads.
    x0, y0, x1, y1 = w["num_heads"]
    cy = int((y0 + y1) / 2)
    g.drag(int(x0 + (x1 - x0) * 0.4), cy, int(x1) - 3, cy)

    # d_out: drag right (logarithmic 1..2048); num_heads must stay a divisor.
    x0, y0, x1, y1 = w["d_out"]
    cy = int((y0 + y1) / 2)
    g.drag(int(x0 + (x1 - x0) * 0.2), cy, int(x0 + (x1 - x0) * 0.55), cy)

    # The token field: click, go to the end, type a new token.
    tx, ty = g.center(w["tokens"])
    g.click(tx, ty)
    g.key("ctrl+End")
    g.type_text(" cat dog")

    # Leave the text field (click the empty status bar), then keys: 1 = raw scores, ] = next head.
    # A lone key is a shortcut once no other follows within 0.3 s (keys closer than that are
    # typing): each waits for the one before to act.
    g.click(5, 795)
    g.key("1")
    g.wait_state(state, "key 1 selects the raw scores", lambda j: j["stage"] == "scores", proc)
    g.key("bracketright")
    g.wait_state(state, "key ] selects head 1", lambda j: j["head"] == 1, proc)
finally:
    rc, out, err = g.stop(proc)

g.check(rc == 0, "app exits 0 after SIGTERM (got %d; stderr: %s)" % (rc, err.strip()))
g.check(os.path.exists(state), "state dump written on exit")
st = g.read_json(state)
m = st["session"]["model"]
print("  state: d_out=%d num_heads=%d tokens=%s error=%r" % (m["d_out"], m["num_heads"], st["session"]["tokens"], st["error"]))
g.check(m["d_out"] > original["model"]["d_out"], "dragging d_out increased it (%d -> %d)" % (original["model"]["d_out"], m["d_out"]))
# num_heads went to 6 (the largest choice for d_out 6); while d_out moved it stays the
# divisor of d_out nearest to that choice (ties go up), not drifting with each step.
divisors = [h for h in range(1, m["d_out"] + 1) if m["d_out"] % h == 0]
nearest = min(divisors, key=lambda h: (abs(h - 6), -h))
g.check(m["num_heads"] == nearest, "num_heads follows the user's choice 6: nearest divisor of %d is %d (got %d)" %
        (m["d_out"], nearest, m["num_heads"]))
g.check(m["d_out"] % m["num_heads"] == 0, "num_heads %d divides d_out %d" % (m["num_heads"], m["d_out"]))
g.check(st["error"] == "", "no validation error")
g.check(st["trace_heads"] == m["num_heads"], "the heatmaps follow: trace has %d heads" % st["trace_heads"])
g.check(st["trace_head_dim"] == m["d_out"] // m["num_heads"], "head_dim = d_out / num_heads")
toks = st["session"]["tokens"]
g.check(toks == original["tokens"] + ["cat", "dog"], "typed tokens appended: %s" % toks)
g.check(st["trace_tokens"] == len(original["tokens"]) + 2, "trace has T = %d (context_length raised)" % st["trace_tokens"])
emb = st["session"]["embeddings"]
n = len(original["tokens"])
g.check(emb[:n] == original["embeddings"], "old tokens keep their vectors")
g.check(emb[n] == emb[original["tokens"].index("cat")], "a repeated word gets the same vector")
g.check(len(emb[n + 1]) == len(original["embeddings"][0]) and emb[n + 1] not in emb[:n + 1],
        "the new word gets its own d_in vector")
g.check(st["stage"] == "scores", "key 1 selected raw scores (stage %s)" % st["stage"])
g.check(st["head"] == 1, "key ] selected the next head (head %d)" % st["head"])
g.check(st["gl_errors"] == 0, "no GL errors")
g.check(st["modified"], "the document is marked modified")

# Embeddings table and view keys on the default lesson: drag a value, move and remove a
# token with the row buttons, then Ctrl+= (larger text), E (enlarge), 5 (stage), C (panel).
layout = os.path.join(tmp, "layout2.json")
state = os.path.join(tmp, "state2.json")
proc = g.start(["gui", "seed003-wrapper", "--no-restore", "--check-gl", "--width", "1280", "--height", "800",
                "--config-dir", os.path.join(tmp, "cfg2"), "--state-dir", os.path.join(tmp, "st2"),
                "--layout-out", layout, "--state-out", state])
try:
    w = g.wait_for_layout(layout, ["embedding0_0", "token0_down", "token0_remove", "d_in", "dropout"], proc=proc)
    g.focus_window()
    # Dropout typed past the slider's end: Ctrl+click enters text mode, 1, Enter.
    g.xdo("keydown", "ctrl")
    g.click(*g.center(w["dropout"]))
    g.xdo("keyup", "ctrl")
    g.key("1")
    g.key("Return")
    ex, ey = g.center(w["embedding0_0"])
    g.drag(ex, ey, ex + 40, ey)
    g.click(*g.center(w["token0_down"]))
    g.click(*g.center(w["token0_remove"]))
    x0, y0, x1, y1 = w["d_in"]  # logarithmic 1..2048: drag from 3 to a few more columns
    cy = int((y0 + y1) / 2)
    g.drag(int(x0 + (x1 - x0) * 0.15), cy, int(x0 + (x1 - x0) * 0.25), cy)
    g.click(5, 795)
    g.key("ctrl+equal")
    g.wait_state(state, "Ctrl+= makes the text larger", lambda j: j["settings"]["font_size"] == 20, proc)
    g.key("e")
    g.wait_state(state, "E enlarges the head", lambda j: j["enlarged"], proc)
    g.key("5")
    g.wait_state(state, "5 selects the after-dropout stage", lambda j: j["stage"] == "dropped", proc)
    g.key("c")
    g.wait_state(state, "C hides the controls", lambda j: not j["show_controls"], proc)
finally:
    rc, out, err = g.stop(proc)
g.check(rc == 0, "second run exits 0 (%s)" % err.strip())
st = g.read_json(state)
lesson = g.read_json(os.path.join(DATA, "reference", "sessions", "seed003-wrapper.json"))
toks, emb = st["session"]["tokens"], st["session"]["embeddings"]
print("  state: tokens=%s first rows=%s" % (toks, emb[:2]))
g.check(toks == ["Your"] + lesson["tokens"][2:], "moved 'Your' down, then removed 'journey': %s" % toks)
g.check(emb[0][0] > lesson["embeddings"][0][0] + 0.1, "dragging the first value raised it (%.2f -> %.2f)" %
        (lesson["embeddings"][0][0], emb[0][0]))
d_in = len(emb[0])
g.check(d_in > 3 and all(len(r) == d_in for r in emb), "dragging d_in added columns to every row (d_in %d)" % d_in)
g.check([r[:3] for r in emb][1:] == lesson["embeddings"][2:] and emb[0][1:3] == lesson["embeddings"][0][1:3],
        "the other vectors moved with their tokens, unchanged; d_in kept the old columns")
g.check(all(-1.0 <= v <= 1.0 for r in emb for v in r[3:]), "the new columns hold token-derived values in [-1, 1]")
g.check(st["trace_tokens"] == 5, "the trace follows (T = 5)")
g.check(st["settings"]["font_size"] == 20, "Ctrl+= made the text larger (%s)" % st["settings"]["font_size"])
g.check(st["enlarged"] is True, "E enlarged the selected head")
g.check(st["stage"] == "dropped", "5 selected the after-dropout stage")
g.check(st["show_controls"] is False, "C hid the controls panel")
g.check(st["gl_errors"] == 0, "no GL errors (font atlas rebuilt)")
p = st["session"]["model"]["dropout"]
g.check(math.isclose(p, 0.9, abs_tol=1e-6) and st["error"] == "" and st["session"]["model"]["training"],
        "dropout typed as 1 is clamped to the slider's 0.9, a valid rate (dropout %r, error %r)" % (p, st["error"]))


# The stage key changes the pixels. Reference: a window opened on the raw scores
# (--screenshot and its sidecar: where the cells are, the colormap and its range).
def cell_centres(side):
    for lay in side["heads"]:
        cw, ch = (lay["x1"] - lay["x0"]) / lay["cols"], (lay["y1"] - lay["y0"]) / lay["rows"]
        for i in range(lay["rows"]):
            for j in range(lay["cols"]):
                yield lay, i, j, int(lay["x0"] + (j + 0.5) * cw), int(lay["y0"] + (i + 0.5) * ch)


def near(a, b, tol=2):
    return max(abs(x - y) for x, y in zip(a, b)) <= tol


common = ["--no-restore", "--check-gl", "--ignore-mouse", "--hide-cell-values", "--width", "1280", "--height", "800"]
ref = os.path.join(tmp, "scores-ref.png")
r = g.run(["gui", "seed003-wrapper", "--stage", "scores", "--exit-after-frames", "8", "--screenshot", ref,
           "--config-dir", os.path.join(tmp, "cfg3"), "--state-dir", os.path.join(tmp, "st3")] + common)
g.check(r.returncode == 0, "a window opened on the raw scores (%s)" % r.stderr.strip())
before = os.path.join(tmp, "before.png")
captures = os.path.join(tmp, "captures")
layout, state = os.path.join(tmp, "layout4.json"), os.path.join(tmp, "state4.json")
proc = g.start(["gui", "seed003-wrapper", "--screenshot", before, "--capture-dir", captures, "--layout-out", layout,
                "--state-out", state, "--config-dir", os.path.join(tmp, "cfg4"), "--state-dir", os.path.join(tmp, "st4")]
               + common)
try:
    w = g.wait_for_layout(layout, ["dropout"], proc=proc)
    g.check(g.wait_for_file(before + ".json", proc=proc), "screenshot of the weights stage written")
    g.focus_window()
    g.key("1")
    g.wait_state(state, "key 1 selects the raw scores", lambda j: j["stage"] == "scores", proc)
    # The whole window, as shown. Shift+F12 is pressed and released with no pause between:
    # ImGui 1.86 alone never sees a press and its release that fall between two frames.
    g.key("shift+F12")
    g.wait_until("Shift+F12 pressed and released at once saves a capture",
                 lambda: glob.glob(os.path.join(captures, "*.png")), lambda shots: len(shots) > 0, proc=proc)
finally:
    rc, out, err = g.stop(proc)
g.check(rc == 0, "third run exits 0 (%s)" % err.strip())
shots = glob.glob(os.path.join(captures, "*.png"))
if g.check(len(shots) == 1, "Shift+F12 captured the window after key 1 (%s)" % shots):
    side_ref, side_before = g.read_json(ref + ".json"), g.read_json(before + ".json")
    g.check(side_before["stage"] == "weights" and side_ref["stage"] == "scores", "the two references show weights and scores")
    g.check([h["x0"] for h in side_ref["heads"]] == [h["x0"] for h in side_before["heads"]] and
            [h["y0"] for h in side_ref["heads"]] == [h["y0"] for h in side_before["heads"]],
            "the cells lie at the same places in both")
    _, _, px_ref = g.read_png(ref)
    _, _, px_before = g.read_png(before)
    _, _, px_after = g.read_png(shots[0])
    torch = g.read_json(os.path.join(DATA, "reference", "expected", "seed003-wrapper.json"))["tensors"]["attn_scores"]
    T = torch["shape"][2]
    cells = changed = same_as_ref = on_scale = 0
    for lay, i, j, x, y in cell_centres(side_ref):
        cells += 1
        a = px_after(x, y)
        changed += not near(a, px_before(x, y), 6)
        same_as_ref += near(a, px_ref(x, y))
        lut, vmin, vmax = side_ref["colormaps"][lay["colormap"]], lay["vmin"], lay["vmax"]
        want = torch["data"][(lay["head"] * T + i) * T + j]
        values = [vmin + k / 255.0 * (vmax - vmin) for k, e in enumerate(lut) if near(a, e)]
        on_scale += any(abs(v - want) <= 1.01 * (vmax - vmin) / 255.0 + 1e-4 for v in values)
    print("  stage key: %d cells, %d changed, %d as the scores window, %d at PyTorch's raw score" %
          (cells, changed, same_as_ref, on_scale))
    g.check(cells == 2 * T * T, "every cell of both heads checked (%d)" % cells)
    g.check(changed >= 0.9 * cells, "key 1 changed the drawn cells (%d of %d)" % (changed, cells))
    g.check(same_as_ref == cells, "after key 1 the cells are the pixels of a window opened on the scores")
    g.check(on_scale == cells, "after key 1 each cell's colour maps back to PyTorch's raw score")
g.finish()
