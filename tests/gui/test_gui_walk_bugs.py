"""What a teacher saw wrong in the walkthrough (issue 12), each checked as the app shows it,
under Xvfb, through the test hooks the app writes (--state-out / --layout-out "walk").

 1. key columns of the wrapper's attention steps: names, never "Your 1 starts"
 2. token labels of one-cell blocks (book-weight-split-3d, view) no longer run together
 3. the mistaken merge flows through out_proj to the output values
 6. a step chip jumps straight to its step; only the next / previous step animates
 7. signed scores on the diverging map, with its legend
 9. an unknown word in --walkthrough is a one-line error, exit 2, before any window
10. a sliding window's mask is told apart from the causal one
 and the step plan is cached on its inputs (built a few times in 60 frames, not 60 times);
 on a 1024 x 768 window every control is inside it, and the Compare tab's tables and slider;
 a tall shapes strip leaves the centre most of the window; at a 24-pixel font the context
 step keeps readable cells, no text over text

usage (under xvfb-run): test_gui_walk_bugs.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
TOKENS = ["Your", "journey", "starts", "with", "one", "step"]


def shown(name, session, spec, frames=8):
    png = os.path.join(tmp, name + ".png")
    state = os.path.join(tmp, name + ".state.json")
    r = g.run(["gui", session, "--exit-after-frames", str(frames), "--no-restore", "--ignore-mouse", "--width", "1280",
               "--height", "800", "--config-dir", png + ".cfg", "--state-dir", png + ".st", "--walkthrough", spec,
               "--screenshot", png, "--state-out", state])
    if not g.check(r.returncode == 0, "%s: exit 0 (%s)" % (name, r.stderr.strip()[-200:])):
        return None
    return g.read_json(state)["walk"]


# [9] --walkthrough with a typo: one line naming the word, exit 2, no window.
r = g.run(["gui", "seed003-wrapper", "--no-restore", "--walkthrough", "transpose,typo", "--exit-after-frames", "50"])
lines = [l for l in r.stderr.splitlines() if l.strip()]
g.check(r.returncode == 2, "--walkthrough transpose,typo: exit 2 (got %d)" % r.returncode)
g.check(len(lines) == 1 and "'typo'" in lines[0] and "--walkthrough" in lines[0],
        "--walkthrough transpose,typo: one line naming the word (%s)" % lines)
r = g.run(["gui", "seed003-wrapper", "--no-restore", "--walkthrough", "pane=x"])
g.check(r.returncode == 2 and "pane=x" in r.stderr, "--walkthrough pane=x: exit 2 naming it")

# [1] Wrapper steps 3 (scores) and 7 (context): the key columns are the tokens.
for step in ("scores", "context"):
    w = shown("wrapper-" + step, "seed003-wrapper", step)
    if w is None:
        continue
    keys = w["key_labels"]
    g.check(keys == TOKENS, "wrapper %s: key columns read %s (got %s)" % (step, TOKENS, keys))

# [2] book-weight-split-3d, view: one-cell blocks; labels all of one form, none of the long
# "token i: word" form that ran into its neighbour.
w = shown("book-view", "book-weight-split-3d", "view")
if w is not None:
    labels = w["block_labels"]
    g.check(len(labels) == 6, "book view: six token blocks labelled (%s)" % labels)
    g.check(all(t in l for l, t in zip(labels, TOKENS)), "book view: each label names its token (%s)" % labels)
    g.check(not any(l.startswith("token ") for l in labels), "book view: no 'token i: word' over a one-cell block (%s)" % labels)
    g.check(len({l.split(":")[0].isdigit() for l in labels}) == 1, "book view: one form for every block (%s)" % labels)

# [3] The mistake reaches the output.
right = shown("out-correct", "seed003-weight-split-6d", "out_proj")
wrong = shown("out-mistake", "seed003-weight-split-6d", "out_proj,mistake")
if right is not None and wrong is not None:
    g.check(right["values"] and wrong["values"] and right["values"] != wrong["values"],
            "mistake: the output values change (%s vs %s)" % (right["values"][:4], wrong["values"][:4]))
    g.check(any("mistake" in t for t in wrong["titles"]), "mistake: the output is titled as the mistake's (%s)" % wrong["titles"])
    # out_proj reads the scrambled merge, and shows that input, not the correct one.
    merge = shown("merge-mistake", "seed003-weight-split-6d", "merge,mistake")
    if merge is not None:
        g.check(any("mistake" in t for t in wrong["operand_titles"]),
                "mistake: out_proj's input is titled as the mistake's merge (%s)" % wrong["operand_titles"])
        g.check(wrong["operand_values"][:16] == merge["values"][:16],
                "mistake: out_proj's input is the scrambled merge (%s vs %s)" % (wrong["operand_values"][:6], merge["values"][:6]))
        g.check(right["operand_values"][:16] != merge["values"][:16],
                "without the mistake out_proj's input is the correct merge (%s)" % right["operand_values"][:6])

# The inspector (strings built before drawing) explains the wrong value it shows: out_proj of
# the scrambled merge, its dot product ending on the value in the cell.
pinned = shown("out-mistake-pinned", "seed003-weight-split-6d", "out_proj,mistake,pin=0")
if pinned is not None:
    lines = pinned["inspector"]
    g.check(len(lines) >= 2 and lines[0].startswith("output (of the mistake)[0, 0, 0] = "), "inspector names the element (%s)" % lines[:1])
    if len(lines) >= 2:
        value = lines[0].rsplit("= ", 1)[1]
        g.check(lines[1].startswith("= merged[") and lines[1].endswith("= " + value),
                "inspector: out_proj's dot product gives the wrong value shown (%s ... %s)" % (lines[1][:30], value))

# [7] Signed scores: the diverging legend is drawn; weights (non-negative) have none.
w = shown("scores-legend", "seed003-wrapper", "scores")
if w is not None:
    g.check(w["legend_swatches"] == 5, "scores: the diverging legend's five swatches (%d)" % w["legend_swatches"])
w = shown("softmax-legend", "seed003-wrapper", "softmax")
if w is not None:
    g.check(w["legend_swatches"] == 0, "softmax: no diverging legend (%d)" % w["legend_swatches"])

# [10] A sliding window's mask (W = 3) as the app shows it: its own legend and the inspector's
# count of the cells it hides, apart from the causal ones.
swa = os.path.join(tmp, "swa.json")
with open(swa, "w") as f:
    json.dump({"format": "mhaviz-session", "version": 3, "tokens": TOKENS,
               "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33],
                              [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]],
               "batch": 1, "model": {"variant": "weight_split", "d_out": 4, "num_heads": 2, "context_length": 6,
                                     "dropout": 0.0, "qkv_bias": False, "causal": True, "seed": 123,
                                     "sliding_window": 3}}, f)
w = shown("window-mask", swa, "mask")
if w is not None:
    g.check(any("15 cells per head after the query" in l and "6 W or more tokens back" in l for l in w["inspector"]),
            "window mask: the inspector counts 15 causal and 6 window cells (%s)" % w["inspector"][:1])


def positions(layout, proc, until, what):
    """Walkthrough positions the app reports (it rewrites the layout each frame the position
    moves) until the last one is `until` with nothing left to animate."""
    seen = []

    def read():
        walk = g.read_json(layout)["walk"]
        seen.append(walk["pos"])
        return walk

    g.wait_until(what, read, lambda w: w["pos"] == until and w["target"] == until, proc=proc, interval=0.01)
    return seen


# The plan of cell sizes is built when its inputs change, not every frame (GPT-2 size: it
# used to build a few hundred scenes a frame).
w = shown("plan-cached", "seed003-weight-split-6d", "transpose", frames=60)
if w is not None:
    g.check(1 <= w["plan_builds"] <= 4, "60 frames at rest: the step plan built %d time(s), not per frame" % w["plan_builds"])

# A 1024 x 768 window (a classroom projector's): the controls wrap onto more lines rather
# than going past the window's edge (Capture, numbers and the mistake's switch did).
state = os.path.join(tmp, "narrow.state.json")
r = g.run(["gui", "seed003-weight-split-6d", "--exit-after-frames", "8", "--no-restore", "--ignore-mouse", "--width",
           "1024", "--height", "768", "--config-dir", state + ".cfg", "--state-dir", state + ".st", "--walkthrough",
           "transpose", "--state-out", state])
st = g.read_json(state) if r.returncode == 0 else {"widgets": {}, "shown": []}
names = ["walk_play", "walk_next", "walk_scrub", "capture_button", "walk_mistake"]
out = [n for n in names if n not in st["shown"] or st["widgets"][n][2] > 1024]
g.check(not out, "1024 x 768: every walkthrough control inside the window (%s not)" % out)

# The same window on the Compare variants tab: the cost tables' last columns inside the tables
# ("forward time (median)" was cut; the names now take two lines) and the "up to heads" slider
# inside the window (beside a wrapped sentence it was past the edge).
state = os.path.join(tmp, "narrow-compare.state.json")
r = g.run(["gui", "seed003-wrapper", "--exit-after-frames", "40", "--no-restore", "--ignore-mouse", "--width", "1024",
           "--height", "768", "--config-dir", state + ".cfg", "--state-dir", state + ".st", "--walkthrough",
           "3,compare", "--state-out", state])
st = g.read_json(state) if r.returncode == 0 else {"widgets": {}, "shown": []}
wd = st["widgets"]
for table in ("cost", "growth"):
    last, whole = table + "_last_column", table + "_table"
    if g.check(last in wd and whole in wd, "1024 x 768, Compare: the %s table drawn" % table):
        g.check(wd[last][2] <= wd[whole][2] + 0.5, "1024 x 768, Compare: the %s table's last column inside it "
                "(ends at %.0f, the table at %.0f)" % (table, wd[last][2], wd[whole][2]))
g.check("cmp_max_heads" in wd and wd["cmp_max_heads"][2] <= 1024,
        "1024 x 768, Compare: the \"up to heads\" slider inside the window (%s)" % wd.get("cmp_max_heads"))

def widget_height(name, session, size, font, step, widget, what):
    """The height of a widget as the app drew it: SESSION's walkthrough at STEP in a window of
    SIZE (w, h) with FONT px; None (a failed check) where the app failed or did not draw it."""
    state = os.path.join(tmp, name + ".state.json")
    r = g.run(["gui", session, "--exit-after-frames", "12", "--no-restore", "--ignore-mouse", "--width", str(size[0]),
               "--height", str(size[1]), "--font-size", str(font), "--config-dir", state + ".cfg", "--state-dir",
               state + ".st", "--walkthrough", str(step), "--state-out", state])
    wd = g.read_json(state)["widgets"] if r.returncode == 0 else {}
    if not g.check(widget in wd, "%s: the %s drawn (%s)" % (what, widget, r.stderr.strip()[-200:])):
        return None
    return wd[widget][3] - wd[widget][1]


# A session of nine lines of shapes (GQA with QK-norm and RoPE) at a 24-pixel font: the shapes
# strip stops at 12% of the window beside the walkthrough (22% elsewhere) and scrolls, the
# walkthrough keeps most of the height (the strip grew to its content and left the figure little
# more than its header; at 22% the centre kept 545 px).
session = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus",
                       "session-v3-gqa-window-qknorm-rope.json")
h = widget_height("tall-shapes", session, (1280, 800), 24, 8, "centre", "nine lines of shapes at 24 px")
if h is not None:
    g.check(h >= 0.72 * 800, "nine lines of shapes at 24 px: the centre keeps %.0f px of 800 (at least 72%%)" % h)

# The lesson at 24 px, 1280 x 800, on the dropout step: the strip's five lines (at 22%) left the
# walkthrough's figure 200 px; beside the walkthrough the strip takes at most 12%.
h = widget_height("lesson-24", "seed003-wrapper", (1280, 800), 24, 6, "walk_canvas", "lesson at 24 px")
if h is not None:
    g.check(h >= 245, "dropout step, 1280 x 800 at 24 px: the figure keeps %.0f px (at least 245; 200 before)" % h)

# 1024 x 768 with a 20-pixel font on the softmax step: its inspector (a four-row table) keeps at
# most 40% of the room under the controls and scrolls; the figure keeps the rest (it had its
# header and 120 px).
h = widget_height("softmax-font", "seed003-wrapper", (1024, 768), 20, 5, "walk_canvas", "softmax at 20 px")
if h is not None:
    g.check(h >= 160, "softmax step, 1024 x 768 at 20 px: the figure keeps %.0f px (at least 160; 120 before)" % h)


def texts_over_texts(display_list):
    """Pairs of horizontal texts of a figure drawn over each other (boxes from the anchor, the
    measured width and the size: ascent above the baseline, descent below)."""
    boxes = []
    for p in display_list["prims"]:
        if p["kind"] != "text" or p["vertical"] or not p["text"].strip():
            continue
        if "text_width" not in p:
            return [("the state gives no text widths", p["text"])]
        w = p["text_width"]
        x = p["x0"] - (w if p["align"] == 2 else w / 2 if p["align"] == 1 else 0)
        boxes.append((p["text"], x, p["y0"] - 0.75 * p["size"], x + w, p["y0"] + 0.2 * p["size"]))
    return [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a[3], b[3]) - max(a[1], b[1]) > 0.5 and min(a[4], b[4]) - max(a[2], b[2]) > 0.5]


# seed003-weight-split-6d's context step at a 24-pixel font on 1280 x 800: the controls on six
# rows (the step chips on two), the inspector's 40% and the chain strip's 210 px beside three
# grids left the figure 184 px and 4-pixel cells, and the result's title "context_vec (2, 2, 3,
# 3)" was drawn over the strip's text. The chips keep one line, the inspector gives way to the
# figure, the chain strip to the cells.
state = os.path.join(tmp, "context-24.state.json")
r = g.run(["gui", "seed003-weight-split-6d", "--exit-after-frames", "12", "--no-restore", "--ignore-mouse", "--width",
           "1280", "--height", "800", "--font-size", "24", "--config-dir", state + ".cfg", "--state-dir", state + ".st",
           "--walkthrough", "context", "--state-out", state])
if g.check(r.returncode == 0, "context at 24 px: exit 0 (%s)" % r.stderr.strip()[-200:]):
    st = g.read_json(state)
    wd, dl = st["widgets"], st["figure"]["display_list"]
    g.check(st["walk"]["titles"] == ["context_vec  (2, 2, 3, 3)"], "context at 24 px: the context step (%s)" % st["walk"]["titles"])
    g.check(wd["walk_chip_1"][1] == wd["walk_chip_12"][1], "context at 24 px: the step chips on one line (%s, %s)"
            % (wd["walk_chip_1"], wd["walk_chip_12"]))
    h = wd["walk_canvas"][3] - wd["walk_canvas"][1]
    g.check(h >= 260, "context at 24 px: the figure keeps %.0f px (at least 260; 184 before)" % h)
    # The scene's cells, left of the chain strip's separator (the strip's small copies are not read).
    strip = min([p["x0"] for p in dl["prims"] if p["class"] == "separator"] or [1e9])
    cells = {p["x1"] - p["x0"] for p in dl["prims"] if p["kind"] == "rect" and p["class"] == "cell" and p["x1"] <= strip}
    g.check(cells and min(cells) >= 15, "context at 24 px: cells of at least 15 px (%s; 4 before)" % sorted(cells))
    over = texts_over_texts(dl)
    g.check(not over, "context at 24 px: no text drawn over another (%s)" % over[:4])

# [6] From the last step, the chip of step 3 goes straight there: no step between is shown.
layout = os.path.join(tmp, "jump-layout.json")
proc = g.start(["gui", "seed003-weight-split-6d", "--no-restore", "--width", "1280", "--height", "800",
                "--config-dir", layout + ".cfg", "--state-dir", layout + ".st", "--walkthrough", "out_proj",
                "--layout-out", layout])
try:
    wid = g.wait_for_layout(layout, ["walk_chip_3", "walk_chip_12", "walk_next"], proc=proc)
    g.focus_window()
    g.xdo("mousemove", 5, 790)
    positions(layout, proc, 11.0, "the walkthrough at rest on step 12")
    g.click(*g.center(wid["walk_chip_3"]))
    seen = positions(layout, proc, 2.0, "chip 3 goes to step 3")
    between = [p for p in seen if 2.0 < p < 11.0]
    g.check(seen and seen[-1] == 2.0, "chip 3 from step 12: at step 3 (last %s)" % (seen[-1:] or None))
    g.check(not between, "chip 3 from step 12: no step between replayed (%s)" % sorted(set(between))[:8])
    # The next step still animates: a position between 3 and 4 is shown on the way.
    g.click(*g.center(wid["walk_next"]))
    seen = positions(layout, proc, 3.0, "Next goes to step 4")
    g.check(any(2.0 < p < 3.0 for p in seen) and seen[-1] == 3.0, "Next from step 3: animates to step 4 (%s)" % sorted(set(seen))[:6])
finally:
    rc, out, err = g.stop(proc)
    g.check(rc == 0, "jump: app exits cleanly (%s)" % err.strip()[-200:])

g.finish()
