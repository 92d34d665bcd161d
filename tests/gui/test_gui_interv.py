"""Interventions in the model view (issue 26), the real app under Xvfb, on the checkpoints
tests/models/make_interventions.py writes:

- `--model-ablate 0.1,0.2:mean`: every thumbnail on screen is the ablated run's weights
  (`mhaviz dump --ablate` of the same heads), the next tokens are its, each with its clean
  probability beside, and the loss of both runs is shown.
- `--norm-weighted`: every thumbnail is what `mhaviz render --view model --norm-weighted`
  draws for the same text.
- Ctrl+click on a thumbnail ablates its head and the panel's "Restore all" undoes it; the
  norm-weighted checkbox switches the view, and F12 then saves the very file `render --view
  model --norm-weighted` writes for the app's canvas and font.
- A bad --model-ablate is bad input: one line naming it, exit 2.

usage (under xvfb-run): test_gui_interv.py PATH/TO/mhaviz INTERVENTIONS_DIR
"""
import hashlib
import json
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
MODEL = os.path.join(sys.argv[2], "hf_tied")  # 3 layers x 4 heads
TEXT = "abcdefgh"
SIZE = ["--width", "1280", "--height", "800"]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def screen(name, extra):
    """Runs the app for a few frames; returns its screenshot's sidecar and its state's model."""
    png, state = os.path.join(tmp, name + ".png"), os.path.join(tmp, name + ".state.json")
    r = g.run(["gui", "--model", MODEL, "--text", TEXT, "--exit-after-frames", "8", "--check-gl", "--no-restore",
               "--ignore-mouse", "--config-dir", tmp + "/c-" + name, "--state-dir", tmp + "/s-" + name,
               "--screenshot", png, "--state-out", state] + SIZE + extra)
    if not g.check(r.returncode == 0, "%s: exit 0, no GL error (%s)" % (name, r.stderr.strip()[-300:])):
        return None, None
    return g.read_json(png + ".json")["model"], g.read_json(state)["model"]


def max_diff(a, b):
    return max(abs((x if x is not None else 0.0) - (y if y is not None else 0.0)) for x, y in zip(a, b))


def test_ablated_run_on_screen():
    side, st = screen("ablated", ["--model-ablate", "0.1,0.2:mean"])
    if side is None:
        return
    r = g.run(["dump", "--model", MODEL, "--text", TEXT, "--ablate", "0.1,0.2:mean"])
    d = json.loads(r.stdout)
    clean = json.loads(g.run(["dump", "--model", MODEL, "--text", TEXT]).stdout)
    worst = 0.0
    for t in side["thumbnails"]:
        w = d["tensors"]["layers.%d.attn_weights" % t["layer"]]
        T = w["shape"][2]
        worst = max(worst, max_diff(t["values"], w["data"][t["head"] * T * T:(t["head"] + 1) * T * T]))
    g.check(len(side["thumbnails"]) == 12 and worst < 1e-6,
            "every thumbnail is the ablated run's weights, as dump --ablate gives them (max diff %.1e)" % worst)
    g.check(st["ablated"] == ["0.1", "0.2"] and st["ablation"] == "mean", "the state names the ablated heads and how")
    g.check([(n["id"], n["p"]) for n in st["next"]] == [(n["id"], n["p"]) for n in d["next_token"]["top"]],
            "the next tokens are the ablated run's (dump --ablate's top five)")
    clean_p = {n["id"]: n["p"] for n in clean["next_token"]["top"]}
    g.check(all(n["clean_p"] == clean_p[n["id"]] for n in st["next"] if n["id"] in clean_p),
            "each with its probability in the clean run beside")
    g.check(st["loss"] is not None and st["clean_loss"] is not None and st["loss"] != st["clean_loss"],
            "the loss on the text, ablated %s against clean %s" % (st["loss"], st["clean_loss"]))


def test_norm_weighted_on_screen():
    side, st = screen("norm", ["--norm-weighted"])
    if side is None:
        return
    cells = os.path.join(tmp, "norm-render.json")
    r = g.run(["render", "--model", MODEL, "--text", TEXT, "--view", "model", "--norm-weighted", "-o",
               os.path.join(tmp, "norm-render.png"), "--cells-json", cells])
    g.check(r.returncode == 0, "render --norm-weighted (%s)" % r.stderr.strip())
    want = g.read_json(cells)["heads"]
    worst = max(max_diff(t["values"], h["values"]) for t, h in zip(side["thumbnails"], want))
    g.check(st["norm_weighted"] and len(want) == len(side["thumbnails"]) == 12 and worst < 1e-6,
            "every thumbnail is render --view model --norm-weighted's (max diff %.1e)" % worst)


def test_click_to_ablate_and_capture():
    lay, state, caps = os.path.join(tmp, "i.layout.json"), os.path.join(tmp, "i.state.json"), os.path.join(tmp, "caps")
    for f in (lay, state):
        if os.path.exists(f):
            os.remove(f)
    p = g.start(["gui", "--model", MODEL, "--text", TEXT, "--no-restore", "--check-gl", "--config-dir", tmp + "/c3",
                 "--state-dir", tmp + "/s3", "--capture-dir", caps, "--layout-out", lay, "--state-out", state] + SIZE)
    shot = os.path.join(caps, "hf_tied-model-view.png")
    try:
        g.wait_for_layout(lay, ["thumb_0_1", "model_norm_weighted"], proc=p)
        win = g.read_json(lay)
        ox, oy = win["window_x"], win["window_y"]
        g.focus_window()

        def click(name):
            g.click_widget(lay, state, name, p, (ox, oy))

        def model(what, pred):
            return g.wait_state(state, what, lambda j: pred(j["model"]), p)["model"]

        model("the model view drawn", lambda m: m.get("n_layer") == 3 and not m["busy"])
        x, y = g.center(g.settled_widget(lay, state, "thumb_0_1", p))
        g.xdo("mousemove", str(ox + x), str(oy + y))
        g.xdo("keydown", "ctrl")
        g.xdo("click", "1")
        g.xdo("keyup", "ctrl")
        m = model("Ctrl+click ablates head 0.1", lambda m: m["ablated"] == ["0.1"] and not m["busy"])
        g.check(m["layer"] == -1, "a Ctrl+click ablates without selecting the head")
        click("model_restore")
        model("Restore all", lambda m: m["ablated"] == [] and m["loss"] is None and not m["busy"])
        click("model_norm_weighted")
        st = model("the norm-weighted view", lambda m: m["norm_weighted"] and not m["busy"])
        g.wait_frames(state, 2, p)
        g.key("F12")
        g.check(g.wait_for_file(shot, proc=p), "F12 on the norm-weighted view saves hf_tied-model-view.png")
        g.stop(p)
    finally:
        if p.poll() is None:
            g.stop(p)
    st = g.read_json(state)["model"]
    if os.path.exists(shot):
        out = os.path.join(tmp, "norm-capture-render.png")
        r = g.run(["render", "--model", MODEL, "--text", TEXT, "--view", "model", "--norm-weighted", "-o", out,
                   "--size", "%dx%d" % tuple(st.get("canvas", (0, 0))), "--font", str(st.get("font"))])
        g.check(r.returncode == 0 and digest(shot) == digest(out),
                "F12: the same file as render --view model --norm-weighted for the app's canvas and font")


def test_bad_ablate():
    r = g.run(["gui", "--model", MODEL, "--model-ablate", "1.x", "--exit-after-frames", "2"])
    g.check(r.returncode == 2 and r.stderr.count("\n") == 1 and "--model-ablate" in r.stderr,
            "a bad --model-ablate: exit 2, one line naming it (%s)" % r.stderr.strip())


test_ablated_run_on_screen()
test_norm_weighted_on_screen()
test_click_to_ablate_and_capture()
test_bad_ablate()
g.finish()
