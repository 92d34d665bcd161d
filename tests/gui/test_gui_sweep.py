"""The ablation sweep in the model view, the real app under Xvfb driven as a teacher would:

- on the 3-layer test checkpoint: "Sweep" with nothing typed judges the text's own last token
  from the position before it; the grid shown is the core's (`render --view sweep` of the text
  without its last token, --target that token, --cells-json); a target typed (and "vs") sweeps
  again; F12 captures the very figure shown (the display list of the state's "figure",
  primitive by primitive) and `render --view sweep --size --font` writes the capture's bytes;
  a click on a cell shows that head large in the heads view; "Logit lens" shows the lens
  table, `render --view lens`'s figure, and F12 captures it the same way; a corrupted text
  typed, "Patch" shows `mhaviz patch --per head`'s grid, F12 `render --view patch`'s figure;
  "layer x position" chosen, Patch shows `mhaviz patch --per layer-position`'s grid, F12 the
  same figure as render;
  the lens's rank of a typed token at the last position and at a clicked column, as `mhaviz
  lens --target` gives it, F12 `render --view lens --target --position`'s figure;
  an edit of the text drops the grid (no button brings it back) and Sweep runs on the new text;
- on a GPT-2-small-sized checkpoint (144 heads, slow enough to watch): the progress bar moves
  while the window keeps drawing, Cancel stops the sweep and no grid replaces the view.

usage (under xvfb-run): test_gui_sweep.py PATH/TO/mhaviz INTERVENTIONS_DIR MODELS_DIR [GPT2_SMALL_DIR]
GPT2_SMALL_DIR is made with make_checkpoints.py --gpt2-small when missing (about 500 MB).
"""
import json
import os
import shutil
import sys

import guitest as g

tmp = g.setup(sys.argv)
MODEL = os.path.join(sys.argv[2], "hf_tied")  # 3 layers x 4 heads, one token a character
MODELS = sys.argv[3]
GPT2_SMALL = sys.argv[4] if len(sys.argv) > 4 else None
TEXT = "abcdefgh"
CORRUPT = "abcdxfgh"
SIZE = ["--width", "1280", "--height", "800"]


def max_diff(a, b):
    return max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) else float("inf")


def comparable(p):
    """What must agree between the screen and a capture: everything but the colours."""
    return json.dumps({k: v for k, v in p.items() if k != "color"}, sort_keys=True)


def start(name, model, text):
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "cfg"), exist_ok=True)
    with open(os.path.join(d, "cfg", "settings.json"), "w") as f:
        # A capture laid out as the screen is: no caption (the theme only changes colours).
        json.dump({"capture_scale": 1, "capture_caption": False, "capture_light": True}, f)
    files = {k: os.path.join(d, k) for k in ("layout.json", "state.json", "caps")}
    p = g.start(["gui", "--model", model, "--text", text, "--no-restore", "--check-gl", "--capture-sidecars",
                 "--config-dir", os.path.join(d, "cfg"), "--state-dir", os.path.join(d, "st"), "--capture-dir",
                 files["caps"], "--layout-out", files["layout.json"], "--state-out", files["state.json"]] + SIZE)
    return p, files["layout.json"], files["state.json"], files["caps"]


def window_shot(caps, name, p):
    """Shift+F12: the whole window saved in caps; copied as name into $MHAVIZ_SHOTS_DIR (to be
    looked at; default: the test's temporary folder)."""
    before = set(os.listdir(caps)) if os.path.isdir(caps) else set()
    g.key("shift+F12")
    new = g.wait_until("a window capture", lambda: [n for n in os.listdir(caps) if n.endswith(".png") and n not in before]
                       if os.path.isdir(caps) else [], lambda n: len(n) > 0, proc=p)
    g.wait_for_file(os.path.join(caps, new[0]), proc=p)
    shutil.copy(os.path.join(caps, new[0]), os.path.join(os.environ.get("MHAVIZ_SHOTS_DIR", tmp), name))


def cells_of_render(args, out):
    cells = out + ".json"
    r = g.run(["render", "--model", MODEL, "--view", "sweep", "-o", out, "--cells-json", cells] + args)
    g.check(r.returncode == 0, "render --view sweep %s (%s)" % (args, r.stderr.strip()))
    return g.read_json(cells)["heads"][0]["values"] if r.returncode == 0 else []


def check_f12(state, caps, name, render_args, p):
    """F12 saves name: the display list of the figure on screen, and render's bytes for the
    app's canvas and font."""
    g.wait_frames(state, 2, p)
    g.key("F12")
    cap = os.path.join(caps, name)
    # The sidecar is written after the image (each atomically): wait for both.
    g.check(g.wait_for_file(cap, proc=p) and g.wait_for_file(cap + ".json", proc=p), "F12 saves %s" % name)
    fig = g.read_json(state)["figure"]
    side = g.read_json(cap + ".json")
    a = [comparable(q) for q in fig["display_list"]["prims"]]
    b = [comparable(q) for q in side["prims"]]
    g.check(a == b and len(a) > 0, "%s: the capture's %d primitives are the screen's %d" % (name, len(b), len(a)))
    out = cap + ".render.png"
    r = g.run(["render", "--model", MODEL] + render_args + ["-o", out, "--size", "%dx%d" % tuple(
        int(v) for v in fig["canvas"]), "--font", "%g" % fig["font"], "--no-caption", "--theme", "light", "--scale", "1"])
    with open(out, "rb") as f1, open(cap, "rb") as f2:
        g.check(r.returncode == 0 and f1.read() == f2.read(),
                "%s: render %s --size --font writes the capture's bytes (%s)" % (name, render_args[2:4], r.stderr.strip()))
    return side


def patch_per_layer_position(click, state, caps, p):
    """"layer x position" beside Patch: mhaviz patch --per layer-position's (L, T) grid, F12
    render --view patch --per layer-position's figure."""
    click("model_patch_per_position")
    g.wait_state(state, "layer x position chosen", lambda j: j["model"]["sweep"]["patch_per"] == "layer-position", p)
    click("model_patch")
    st = g.wait_state(state, "the layers x positions grid shown", lambda j: j["model"]["sweep"]["shown"] and
                      j["model"]["sweep"].get("per") == "layer-position" and not j["model"]["sweep"]["running"], p)
    sw = st["model"]["sweep"]
    r = g.run(["patch", "--model", MODEL, "--clean", TEXT, "--corrupt", CORRUPT, "--target", "i", "--vs", "j",
               "--per", "layer-position"])
    want = [x for row in json.loads(r.stdout)["effect"] for x in row] if r.returncode == 0 else []
    g.check((sw["rows"], sw["cols"]) == (3, len(TEXT)) and max_diff(sw["values"], want) < 1e-6,
            "Patch per layer x position: mhaviz patch --per layer-position's 3 x %d effects (max diff %.1e)" %
            (len(TEXT), max_diff(sw["values"], want)))
    g.check(sw["values"][-1] == 1.0, "the residual after the last layer at the last position restores it all")
    check_f12(state, caps, "hf_tied-patch-layer-position.png",
              ["--text", TEXT, "--view", "patch", "--corrupt", CORRUPT, "--target", "i", "--vs", "j",
               "--per", "layer-position"], p)
    window_shot(caps, "small-patch-layer-position.png", p)


def lens_rank(click, state, caps, p):
    """The lens's rank of a typed token: at the last position, then at a column clicked; mhaviz
    lens --target's ranks and probabilities; F12 render --view lens --target --position's figure."""
    click("model_show_lens")
    g.wait_state(state, "the lens table shown", lambda j: j["model"]["lens_shown"], p)
    click("model_lens_token")
    g.type_text("e")
    g.key("Tab")
    out = os.path.join(tmp, "lens-e.json")
    r = g.run(["lens", "--model", MODEL, "--text", TEXT, "--target", "e", "-o", out])
    lens = g.read_json(out)["layers"] if r.returncode == 0 else []

    def at(pos):
        return ([x["positions"][pos]["target_rank"] for x in lens], [x["positions"][pos]["target_p"] for x in lens])

    for pos, how in ((len(TEXT) - 1, None), (3, "grid_0_3")):
        if how:
            click(how)
        st = g.wait_state(state, "the rank of 'e' at position %d" % pos, lambda j: j["model"]["lens"]["position"] == pos
                          and len(j["model"]["lens"]["rank"]) == 3 and not j["model"]["busy"], p)
        ranks, ps = at(pos)
        got = st["model"]["lens"]
        g.check(got["rank"] == ranks and max_diff(got["p"], ps) < 1e-7,
                "position %d: 'e' ranks %s after each layer (p %s), as mhaviz lens --target says" % (pos, got["rank"], got["p"]))
        texts = [q["text"] for q in st["figure"]["display_list"]["prims"] if q.get("class") == "side-text"]
        g.check(len(texts) == 3 and texts[0].startswith("rank %d" % (ranks[0] + 1)),
                "beside the table, a line per layer (%s)" % texts)
    check_f12(state, caps, "hf_tied-lens-2.png", ["--text", TEXT, "--view", "lens", "--target", "e", "--position", "3"], p)
    window_shot(caps, "small-lens-rank.png", p)
    click("model_show_lens")
    g.wait_state(state, "the heads again", lambda j: not j["model"]["lens_shown"], p)


def edited_text_drops_the_grid(click, state, p):
    """A grid of another text is not shown: after an edit of the text the heads come back, with
    no grid to go back to, and Sweep runs for the new text."""
    click("model_show_sweep")
    g.wait_state(state, "the grid shown", lambda j: j["model"]["sweep"]["shown"], p)
    click("model_text")
    g.key("End")
    g.type_text("i")
    st = g.wait_state(state, "the edited text's view", lambda j: j["model"]["text"] == TEXT + "i" and
                      len(j["model"].get("ids", [])) == len(TEXT) + 1 and not j["model"]["busy"], p)
    sw = st["model"]["sweep"]
    g.check(not sw["shown"] and "rows" not in sw and st["figure"]["name"] == "model",
            "after the text is edited the old grid is gone and the heads are shown (%s)" % st["figure"]["name"])
    g.check("model_show_sweep" not in g.read_json(st_layout(state))["shown"], "no button brings the old grid back")
    g.key("Tab")
    click("model_sweep")
    st = g.wait_state(state, "the new text's grid", lambda j: j["model"]["sweep"]["shown"] and
                      not j["model"]["sweep"]["running"], p)
    g.check(st["model"]["sweep"]["ids"] == st["model"]["ids"], "Sweep again: a grid of the edited text")


def st_layout(state):
    return os.path.join(os.path.dirname(state), "layout.json")


def test_sweep_grid_capture_and_click():
    p, lay, state, caps = start("small", MODEL, TEXT)
    try:
        g.wait_for_layout(lay, ["model_sweep", "model_sweep_target"], proc=p)
        win = g.read_json(lay)
        ox, oy = win["window_x"], win["window_y"]
        g.focus_window()

        def click(name):
            g.click_widget(lay, state, name, p, (ox, oy))

        def sweep(what, pred):
            return g.wait_state(state, what, lambda j: pred(j["model"]["sweep"]), p)

        g.wait_state(state, "the model view drawn", lambda j: j["model"].get("n_layer") == 3 and not j["model"]["busy"], p)
        click("model_sweep")
        st = sweep("the sweep's grid shown", lambda s: s["shown"] and not s["running"])
        sw = st["model"]["sweep"]
        g.check(st["figure"]["name"] == "model_grid", "the centre shows the sweep's grid (%s)" % st["figure"]["name"])
        want = cells_of_render(["--text", TEXT[:-1], "--target", TEXT[-1]], os.path.join(tmp, "last.png"))
        g.check(sw["rows"] == 3 and sw["cols"] == 4 and sw["vs"] == -1 and max_diff(sw["values"], want) < 1e-6,
                "nothing typed: the change of log p('h') after 'abcdefg', as render --view sweep computes it "
                "(max diff %.1e)" % max_diff(sw["values"], want))
        # A target and vs typed: the logit difference at the whole text's last position.
        click("model_sweep_target")
        g.type_text("i")
        click("model_sweep_vs")
        g.type_text("j")
        g.key("Tab")
        g.wait_state(state, "target and vs typed",
                     lambda j: (j["model"]["sweep"]["target_text"], j["model"]["sweep"]["vs_text"]) == ("i", "j"), p)
        click("model_sweep")
        st = sweep("the typed target's grid", lambda s: s["shown"] and not s["running"] and s["vs"] >= 0)
        sw = st["model"]["sweep"]
        want = cells_of_render(["--text", TEXT, "--target", "i", "--vs", "j"], os.path.join(tmp, "typed.png"))
        g.check(max_diff(sw["values"], want) < 1e-6 and sw["ids"] == st["model"]["ids"],
                "typed 'i' vs 'j': render --view sweep --target i --vs j's grid (max diff %.1e)" %
                max_diff(sw["values"], want))
        check_f12(state, caps, "hf_tied-sweep.png", ["--text", TEXT, "--view", "sweep", "--target", "i", "--vs", "j"], p)
        # A click on cell (1, 2) shows head 1.2 large.
        click("grid_1_2")
        m = g.wait_state(state, "head 1.2 large", lambda j: j["model"]["big"] == "1.2" and not j["model"]["busy"],
                         p)["model"]
        g.check(not m["sweep"]["shown"] and m["layer"] == 1 and m["head"] == 2,
                "a click on a cell selects its head in the heads view")
        click("model_show_sweep")
        g.wait_state(state, "the grid shown again", lambda j: j["model"]["sweep"]["shown"], p)
        g.settle(state, p)
        window_shot(caps, "small-window.png", p)
        # The logit lens table: render --view lens's cells, F12 the same figure; again: the heads.
        click("model_show_lens")
        st = g.wait_state(state, "the lens table shown", lambda j: j["model"]["lens_shown"] and
                          j["figure"]["name"] == "model_grid" and not j["model"]["busy"], p)
        cells = os.path.join(tmp, "lens.json")
        r = g.run(["render", "--model", MODEL, "--text", TEXT, "--view", "lens", "-o", os.path.join(tmp, "lens.png"),
                   "--cells-json", cells])
        want = g.read_json(cells)["heads"][0] if r.returncode == 0 else {"values": []}
        got = [h for h in st["figure"]["display_list"]["heatmaps"]]
        g.check(len(got) == 1 and (got[0]["rows"], got[0]["cols"]) == (3, 8) == (want["rows"], want["cols"]),
                "the lens table: 3 layers x 8 positions, as render --view lens")
        side = check_f12(state, caps, "hf_tied-lens.png", ["--text", TEXT, "--view", "lens"], p)
        got = side["heatmaps"][0]["values"] if side["heatmaps"] else []
        g.check(max_diff(got, want["values"]) < 1e-6,
                "each cell the top token's probability, as render --view lens (max diff %.1e)" %
                max_diff(got, want["values"]))
        window_shot(caps, "small-lens.png", p)
        click("model_show_lens")
        g.wait_state(state, "the heads again", lambda j: not j["model"]["lens_shown"] and j["figure"]["name"] == "model", p)
        # Activation patching: a corrupted text of as many tokens; "Patch" gives patch --per head's grid.
        click("model_corrupt_text")
        g.type_text(CORRUPT)
        g.key("Tab")
        g.wait_state(state, "the corrupted text typed", lambda j: j["model"]["sweep"]["corrupt_text"] == CORRUPT, p)
        click("model_patch")
        st = g.wait_state(state, "the patching grid shown", lambda j: j["model"]["sweep"]["shown"] and
                          j["model"]["sweep"].get("corrupt") and not j["model"]["sweep"]["running"], p)
        sw = st["model"]["sweep"]
        r = g.run(["patch", "--model", MODEL, "--clean", TEXT, "--corrupt", CORRUPT, "--target", "i", "--vs", "j",
                   "--per", "head"])
        want = [x for row in json.loads(r.stdout)["effect"] for x in row] if r.returncode == 0 else []
        g.check(max_diff(sw["values"], want) < 1e-6 and sw["metric_corrupt"] != sw["clean"],
                "Patch: mhaviz patch --per head's effects, 1 = restored (max diff %.1e)" % max_diff(sw["values"], want))
        check_f12(state, caps, "hf_tied-patch.png",
                  ["--text", TEXT, "--view", "patch", "--corrupt", CORRUPT, "--target", "i", "--vs", "j"], p)
        window_shot(caps, "small-patch.png", p)
        patch_per_layer_position(click, state, caps, p)
        lens_rank(click, state, caps, p)
        edited_text_drops_the_grid(click, state, p)
        g.stop(p)
    finally:
        if p.poll() is None:
            g.stop(p)


def test_progress_and_cancel():
    if not GPT2_SMALL:
        print("skip progress and Cancel: no GPT2_SMALL_DIR given")
        return
    g.gpt2_small_checkpoint(GPT2_SMALL, MODELS)
    p, lay, state, caps = start("big", GPT2_SMALL, "the heat in the heater and the heat")
    try:
        g.wait_for_layout(lay, ["model_sweep"], proc=p)
        win = g.read_json(lay)
        ox, oy = win["window_x"], win["window_y"]
        g.focus_window()
        g.wait_state(state, "the 144 heads drawn",
                     lambda j: j["model"].get("n_layer") == 12 and not j["model"]["busy"], p, timeout=600)
        x, y = g.center(g.settled_widget(lay, state, "model_sweep", p))
        g.click(ox + x, oy + y)
        st = g.wait_state(state, "the sweep under way, some heads done",
                          lambda j: j["model"]["sweep"]["running"] and j["model"]["sweep"]["done"] >= 2, p)
        sw = st["model"]["sweep"]
        g.check(sw["total"] == 144 and "model_sweep_progress" in g.read_json(lay)["shown"],
                "the progress bar shows %d of %d heads" % (sw["done"], sw["total"]))
        # The window keeps drawing while the sweep runs on its own thread.
        frames = st["frames"]
        st = g.wait_state(state, "frames drawn while more heads are done",
                          lambda j: j["frames"] >= frames + 3 and j["model"]["sweep"]["done"] > sw["done"], p)
        g.check(st["model"]["sweep"]["running"], "%d frames drawn while the sweep went from %d to %d heads" %
                (st["frames"] - frames, sw["done"], st["model"]["sweep"]["done"]))
        window_shot(caps, "big-progress.png", p)
        x, y = g.center(g.settled_widget(lay, state, "model_sweep_cancel", p))
        g.click(ox + x, oy + y)
        st = g.wait_state(state, "the sweep cancelled", lambda j: not j["model"]["sweep"]["running"], p)
        g.check(not st["model"]["sweep"]["shown"] and "rows" not in st["model"]["sweep"] and
                st["figure"]["name"] == "model", "Cancel: no grid, the heads still shown")
        g.stop(p)
    finally:
        if p.poll() is None:
            g.stop(p)


test_sweep_grid_capture_and_click()
test_progress_and_cancel()
g.finish()
