"""One picture for screen and slide: every view the app draws in its centre is a display list
built once (app/figure); the screen draws it and a capture draws the same list. Checked here
as the app runs, under Xvfb, for the lesson's grid and enlarged head, walkthrough steps (the
matmul steps with their operands, the mistake with the correct merge beside it, out_proj with
its W and the output, the middle of an animation), the comparison tab (wrapper vs weight split, and
the attention variants against MHA, whose state must say its figures), and the model view of a
trained GPT (its grid, and a head shown large beside it) and of a Gemma-3-shaped folder, and the Train view (its plots and the
probe's heads):

- the capture's display list (--capture-sidecars) is the screen's (the state's "figure"),
  primitive by primitive: kind, geometry, text, class, size (colours follow the theme);
- a dark capture at scale 1 without a caption has the screen's pixels where cells are
  (the window screenshot cropped at the figure's place);
- `mhaviz render` with the canvas and font the app used writes the very same bytes.

usage (under xvfb-run): test_gui_figures.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import os
import re
import sys

import guitest as g

tmp = g.setup(sys.argv)
W, H = 1280, 800
# A lesson with a sliding window (W = 2 of 6 tokens): two hatches, the causal mask's and the window's.
WINDOW = os.path.join(tmp, "window.json")
with open(WINDOW, "w") as f:
    json.dump({"format": "mhaviz-session", "version": 3, "tokens": ["Your", "journey", "starts", "with", "one", "step"],
               "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33],
                              [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]], "batch": 1,
               "model": {"variant": "weight_split", "d_out": 4, "num_heads": 2, "context_length": 6, "dropout": 0.0,
                         "qkv_bias": False, "causal": True, "seed": 123, "sliding_window": 2}}, f)


def capture_run(name, args):
    """Runs the app on args, captures what is shown on the last frame, screenshots the window."""
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "cfg"), exist_ok=True)
    with open(os.path.join(d, "cfg", "settings.json"), "w") as f:
        # A capture comparable pixel for pixel with the screen: dark, 1x, no caption.
        json.dump({"capture_scale": 1, "capture_light": False, "capture_caption": False}, f)
    win = os.path.join(d, "window.png")
    state = os.path.join(d, "state.json")
    caps = os.path.join(d, "captures")
    r = g.run(["gui"] + args + ["--no-restore", "--ignore-mouse", "--width", str(W), "--height", str(H),
                                "--config-dir", os.path.join(d, "cfg"), "--state-dir", os.path.join(d, "st"),
                                "--exit-after-frames", "12", "--capture-on-exit", "--capture-sidecars",
                                "--capture-dir", caps, "--screenshot", win, "--state-out", state])
    if not g.check(r.returncode == 0, "%s: exit 0 (%s)" % (name, r.stderr.strip()[-300:])):
        return None
    pngs = sorted(n for n in os.listdir(caps) if n.endswith(".png")) if os.path.isdir(caps) else []
    if not g.check(len(pngs) == 1, "%s: one capture written (%s)" % (name, pngs)):
        return None
    cap = os.path.join(caps, pngs[0])
    return {"state": g.read_json(state), "capture": cap, "sidecar": g.read_json(cap + ".json"), "window": win}


def comparable(p):
    """What must agree between the screen and a capture: everything but the colours."""
    keep = {k: v for k, v in p.items() if k != "color"}
    return json.dumps(keep, sort_keys=True)


def check_lists(name, run):
    screen = run["state"]["figure"]["display_list"]
    cap = run["sidecar"]
    a = [comparable(p) for p in screen["prims"]]
    b = [comparable(p) for p in cap["prims"] if p["class"] != "caption"]
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    g.check(a == b and len(a) > 0,
            "%s: the capture's %d primitives are the screen's %d (first difference at %s: %s / %s)" %
            (name, len(b), len(a), first, a[first][:160] if first is not None else "", b[first][:160] if first is not None else ""))
    ga = [{k: v for k, v in h.items() if k != "values"} for h in screen["heatmaps"]]
    gb = [{k: v for k, v in h.items() if k != "values"} for h in cap["heatmaps"]]
    g.check(ga == gb, "%s: the same %d heatmaps in the same places" % (name, len(ga)))
    g.check(screen["hits"] == cap["hits"], "%s: the same %d named regions" % (name, len(screen["hits"])))
    g.check((screen["width"], screen["height"]) == (cap["width"], cap["height"]),
            "%s: the same size %sx%s" % (name, screen["width"], screen["height"]))


def check_pixels(name, run, min_cell=6):
    """Where the figure has solid cells (heatmap cells, walkthrough cells) the dark 1x capture
    and the window show the same colour. Cells narrower than min_cell are left out (a number
    printed in a cell covers its middle)."""
    fig = run["state"]["figure"]
    ox, oy = int(round(fig["origin"][0])), int(round(fig["origin"][1]))
    cw, chh, cap = g.read_png(run["capture"])
    _, _, win = g.read_png(run["window"])
    points = []
    for h in run["sidecar"]["heatmaps"]:
        cell = (h["x1"] - h["x0"]) / max(1, h["cols"])
        if cell < min_cell:
            continue
        for i in range(min(h["rows"], 8)):
            for j in range(min(h["cols"], 8)):
                # Near the cell's corner (its number is in the middle); hidden cells too, where
                # the stripes of the masked or the window's hatch must fall on the same pixels.
                points.append((int(h["x0"] + (j + 0.2) * cell), int(h["y0"] + (i + 0.2) * cell)))
    for p in run["sidecar"]["prims"]:
        # Cells at rest (whole pixels, opaque): a moving cell's sub-pixel edges are anti-aliased
        # on screen and rounded in a capture.
        whole = all(float(p[k]).is_integer() for k in ("x0", "y0", "x1", "y1"))
        solid = p["class"].startswith("cell") or p["class"] == "bar"  # the variants' cost bars too
        if p["kind"] == "rect" and solid and p["x1"] - p["x0"] >= 8 and p["color"][3] == 255 and whole:
            points.append((int(p["x0"] + 3), int(p["y1"] - 3)))
    # A figure taller than its canvas (the variants' in its scrolling tab) shows its top on screen.
    points = [(x, y) for x, y in points if y < fig["canvas"][1]]
    bad = []
    ww, wh, _ = g.read_png(run["window"])
    for x, y in points[:400]:
        if x >= cw or y >= chh or ox + x >= ww or oy + y >= wh:
            bad.append(((x, y), "outside the window or the capture"))
            continue
        a, b = cap(x, y), win(ox + x, oy + y)
        if max(abs(u - v) for u, v in zip(a, b)) > 3:
            bad.append(((x, y), a, b))
    g.check(points and not bad, "%s: %d cell colours of the capture are the window's (bad: %s)" % (name, len(points), bad[:3]))


def check_render(name, run, render_args):
    """`mhaviz render` at the app's canvas and font gives the capture's bytes."""
    fig = run["state"]["figure"]
    out = run["capture"] + ".render.png"
    size = "%dx%d" % (int(fig["canvas"][0]), int(fig["canvas"][1]))
    r = g.run(["render"] + render_args + ["-o", out, "--size", size, "--font", "%g" % fig["font"], "--theme", "dark",
                                          "--no-caption", "--scale", "1"])
    if not g.check(r.returncode == 0, "%s: render exit 0 (%s)" % (name, r.stderr.strip())):
        return
    with open(out, "rb") as a, open(run["capture"], "rb") as b:
        g.check(a.read() == b.read(), "%s: render --size %s --font %g writes the capture's bytes" % (name, size, fig["font"]))


def check_variants_state(st):
    """The state says the variants' figures the tab shows: every pair as the lesson says it, a
    cost row per variant, and KV bytes equal to `mhaviz kv-memory --session --dtype fp32`'s."""
    c = st["compare"]
    g.check(c["tab"] and c["part"] == "variants" and c["valid"], "variants: the tab's part is shown (%s)" % c["part"])
    g.check([r["variant"] for r in c["costs"]] == ["MHA", "GQA", "MQA", "MLA", "SWA"],
            "variants: one cost row per variant, MHA first (%s)" % [r["variant"] for r in c["costs"]])
    g.check(c["equivalences"] and all(e["equal"] == e["expected_equal"] for e in c["equivalences"]),
            "variants: each pair equal or not as the lesson says (%s)" %
            [(e["claim"], e["verdict"]) for e in c["equivalences"]])
    g.check(any(e["claim"] == "Sliding window W = 2 < T is not causal MHA" and not e["equal"] for e in c["equivalences"]),
            "variants: the session's window 2 of 6 tokens is not causal MHA")
    r = g.run(["kv-memory", "--session", WINDOW, "--dtype", "fp32"])
    keys = dict(kv.split("=") for kv in r.stdout.strip().splitlines()[-1].split())
    rows = {x["variant"]: x for x in c["costs"]}
    g.check(int(keys["mha_bytes"]) == rows["MHA"]["kv_bytes_context"] and
            int(keys["mha_swa_bytes"]) == rows["SWA"]["kv_bytes_context"],
            "variants: KV bytes are kv-memory's (%s; MHA %d, SWA %d)" %
            (keys, rows["MHA"]["kv_bytes_context"], rows["SWA"]["kv_bytes_context"]))


VIEWS = [
    # name, app arguments, the same figure from `mhaviz render` (None: no render view of it)
    ("lesson-grid", ["seed003-wrapper"], ["seed003-wrapper", "--head", "0"]),
    ("lesson-head", ["seed003-wrapper", "--head", "1", "--stage", "scores"],
     ["seed003-wrapper", "--view", "head", "1", "--stage", "scores"]),
    ("walk-scores", ["seed003-weight-split-6d", "--walkthrough", "scores"],
     ["seed003-weight-split-6d", "--view", "step", "scores", "--pane", "q"]),
    ("walk-context", ["seed003-weight-split-6d", "--walkthrough", "context"],
     ["seed003-weight-split-6d", "--view", "step", "context", "--pane", "q"]),
    ("walk-merge-mistake", ["seed003-weight-split-6d", "--walkthrough", "merge,mistake"],
     ["seed003-weight-split-6d", "--view", "step", "merge", "--mistake", "--pane", "q"]),
    ("walk-out-proj", ["seed003-weight-split-6d", "--walkthrough", "out_proj"],
     ["seed003-weight-split-6d", "--view", "step", "out_proj", "--pane", "q"]),
    ("walk-project-wrapper", ["seed003-wrapper", "--walkthrough", "project"],
     ["seed003-wrapper", "--view", "step", "project", "--pane", "q"]),
    ("walk-moving", ["seed003-weight-split-6d", "--walkthrough", "view+0.5"], None),
    ("compare", ["seed003-wrapper", "--walkthrough", "1,compare"], None),
    # The same tab's attention variants against MHA: one figure for screen, capture and render.
    ("compare-variants", [WINDOW, "--walkthrough", "1,variants"], [WINDOW, "--view", "variants"]),
    ("lesson-window", [WINDOW], [WINDOW, "--head", "0"]),
    # The Train view paused at step 30: its plots and the probe's heads, head 1.1 large.
    ("train", ["--train-until", "30", "--model-head", "1.1"], None),
]
MODEL = os.path.join(os.environ.get("MHAVIZ_MODELS_DIR", ""), "hf_untied")
TEXT = "the heat in the heater"
if os.path.isdir(MODEL):
    VIEWS += [
        ("model-grid", ["--model", MODEL, "--text", TEXT], ["--model", MODEL, "--text", TEXT, "--view", "model"]),
        ("model-head", ["--model", MODEL, "--text", TEXT, "--model-head", "1.2"],
         ["--model", MODEL, "--text", TEXT, "--view", "model", "1.2"]),
    ]
else:
    g.check(False, "the torch-made checkpoints are in MHAVIZ_MODELS_DIR (%r)" % MODEL)
# A Gemma-3-shaped folder (make_modern_checkpoints.py, with the small tokenizer.json): heads
# grouped by K/V head, two sliding layers with the window's hatch, head 1.1 large.
MODERN = os.environ.get("MHAVIZ_MODERN_DIR", "")
if os.path.isdir(os.path.join(MODERN, "gemma3_f32")):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
    from small_tokenizer import hf_folder  # noqa: E402

    GEMMA = hf_folder(MODERN, "gemma3_f32", os.path.join(tmp, "gemma3_f32"))
    HF_TEXT = "hello world, hello"
    VIEWS += [("hf-model-head", ["--model", GEMMA, "--text", HF_TEXT, "--model-head", "1.1"],
               ["--model", GEMMA, "--text", HF_TEXT, "--view", "model", "1.1"])]
else:
    g.check(False, "the Qwen/Llama/Gemma checkpoints are in MHAVIZ_MODERN_DIR (%r)" % MODERN)

for name, args, render_args in VIEWS:
    run = capture_run(name, args)
    if run is None:
        continue
    fig = run["state"]["figure"]
    if not g.check(fig is not None and fig["display_list"]["prims"], "%s: the state names the centre's figure" % name):
        continue
    dl = fig["display_list"]
    print("  %s: %s figure %dx%d on a %dx%d canvas" % (name, fig["name"], dl["width"], dl["height"], fig["canvas"][0],
                                                     fig["canvas"][1]))
    g.check(dl["width"] <= fig["canvas"][0] + 1, "%s: the figure is no wider than its canvas (%d <= %d)" %
            (name, dl["width"], fig["canvas"][0]))
    check_lists(name, run)
    # The Train view prints no numbers in cells: its large head's 4-5 pixel cells are compared.
    check_pixels(name, run, 4 if name == "train" else 6)
    if render_args:
        check_render(name, run, render_args)
    if name == "compare-variants":
        check_variants_state(run["state"])
    if name == "train":
        # The menu bar names the step the view's title shows (it read the run before the panels took
        # its news and stayed at "-step28" beside "step 30 of 1000" once the run paused).
        shown = [re.search(r"step (\d+) of", p.get("text", "")) for p in dl["prims"] if p.get("class") == "title"]
        shown = [m.group(1) for m in shown if m]
        g.check(len(shown) == 1 and run["state"]["menu_title"].endswith("-step" + shown[0]),
                "train: the menu bar names the step shown (%r, the view: step %s)" % (run["state"]["menu_title"],
                                                                                    shown))

g.finish()
