"""Real input with xdotool: drag the num_heads and d_out sliders, type a token into the
token field, press stage and head keys; the state the app writes on exit must follow.

usage (under xvfb-run): test_gui_input.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import os
import sys
import time

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
    time.sleep(0.5)

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
    time.sleep(0.3)

    # Leave the text field (click the empty status bar), then keys: 1 = raw scores, ] = next head.
    g.click(5, 795)
    g.key("1")
    g.key("bracketright")
    time.sleep(0.5)
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
    w = g.wait_for_layout(layout, ["embedding0_0", "token0_down", "token0_remove", "d_in"], proc=proc)
    g.focus_window()
    time.sleep(0.5)
    ex, ey = g.center(w["embedding0_0"])
    g.drag(ex, ey, ex + 40, ey)
    g.click(*g.center(w["token0_down"]))
    time.sleep(0.3)
    g.click(*g.center(w["token0_remove"]))
    time.sleep(0.3)
    x0, y0, x1, y1 = w["d_in"]  # logarithmic 1..2048: drag from 3 to a few more columns
    cy = int((y0 + y1) / 2)
    g.drag(int(x0 + (x1 - x0) * 0.15), cy, int(x0 + (x1 - x0) * 0.25), cy)
    g.click(5, 795)
    g.key("ctrl+equal")
    g.key("e")
    g.key("5")
    g.key("c")
    time.sleep(0.5)
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
g.finish()
