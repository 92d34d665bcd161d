"""The model view of today's open models (issue 25), the real app under Xvfb, on a
Qwen3-shaped and a Gemma-3-shaped checkpoint of make_modern_checkpoints.py (random weights,
copied with the small byte-level tokenizer.json of tests/models/small_tokenizer.py).

- `gui --model FOLDER --text TEXT` opens either with no GL error; the state names the
  architecture and its K/V heads and windows; the tokens shown are dump's (<bos> first, as
  the tokenizer's template says); every thumbnail holds dump's weights (masked cells: null,
  the keys outside a sliding layer's window too).
- The figure groups the query heads under "K/V 0", "K/V 1" (Qwen3: 4 query heads sharing 2)
  and labels Gemma's sliding layers "sliding W = 4" on a band (layers 0 and 1 of 3).
- Ctrl+click on a thumbnail ablates that query head: the next tokens shown are those of
  `mhaviz dump --ablate L.H` (hf_interventions.hpp), with the loss on the text beside the
  clean run's; Ctrl+click again restores it. The interventions' controls (Sweep, Logit lens,
  norm-weighted attention) are there as for a GPT, inside a 1280 x 800 window with a head
  large; before any forward (a text longer than the context) the panel still names the model.
- Errors said once: a folder without tokenizer.json gives the text's error under the text box,
  the view pointing to it (saying it itself with the panel hidden); a model that does not open
  has its long error cut to the window in the status bar.
- A click shows a head large; F12 saves the very file `mhaviz render --model FOLDER --view
  model L.H --size W x H --font PX` writes for the app's canvas and font.

usage (under xvfb-run): test_gui_hfmodel.py PATH/TO/mhaviz MODERN_DIR
"""
import hashlib
import os
import sys

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from small_tokenizer import BOS, hf_folder  # noqa: E402

tmp = g.setup(sys.argv)
MODERN = sys.argv[2]
TEXT = "hello world, hello"
SIZE = ["--width", "1280", "--height", "800"]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def texts(state, cls):
    fig = state["figure"]
    return [p["text"] for p in fig["display_list"]["prims"] if p.get("class") == cls] if fig else []


def check_thumbnails(name, side, d, windows):
    """Every thumbnail's cells (one per token: pool 1) against dump's weights; hidden cells
    (after the query, or W or more keys back on a sliding layer) are null."""
    m = side["model"]
    H = d["model"]["num_attention_heads"]
    T = len(d["token_ids"])
    bad = 0
    for k, th in enumerate(m["thumbnails"]):
        layer, h = divmod(k, H)
        w = d["tensors"]["layers.%d.attn_weights" % layer]["data"][h * T * T:(h + 1) * T * T]
        W = windows[layer]
        for i in range(T):
            for j in range(T):
                v = th["values"][i * T + j]
                hidden = j > i or (W > 0 and i - j >= W)
                if (v is None) != hidden or (v is not None and abs(v - w[i * T + j]) > 1e-6):
                    bad += 1
    g.check(m["pool"] == 1 and bad == 0, "%s: %d thumbnails hold dump's weights, the window's keys hidden (%d bad)" %
            (name, len(m["thumbnails"]), bad))


def check_model(name, folder, layers, heads, kv_heads, windows):
    lay = os.path.join(tmp, name + ".layout.json")
    state = os.path.join(tmp, name + ".state.json")
    caps = os.path.join(tmp, name + "-caps")
    shot = os.path.join(tmp, name + ".png")
    args = ["gui", "--model", folder, "--text", TEXT, "--no-restore", "--check-gl", "--config-dir", tmp + "/c-" + name,
            "--state-dir", tmp + "/s-" + name, "--capture-dir", caps, "--layout-out", lay, "--state-out", state] + SIZE
    d = g.model_dump(folder, TEXT)
    p = g.start(args)
    try:
        g.wait_for_layout(lay, ["thumb_0_1", "model_norm_weighted", "model_sweep", "model_show_lens"], proc=p)
        win = g.read_json(lay)
        ox, oy = win["window_x"], win["window_y"]
        g.focus_window()

        def model(what, pred):
            return g.wait_state(state, what, lambda j: pred(j["model"]), p)

        st = model("the model view drawn", lambda m: m.get("n_layer") == layers and not m["busy"] and m["shown"])
        m = st["model"]
        f = m["facts"]
        g.check((f["layers"], f["heads"], f["kv_heads"], f["windows"]) == (layers, heads, kv_heads, windows),
                "%s: the state's facts: %d layers, %d query heads sharing %d K/V heads, windows %s" %
                (name, layers, heads, kv_heads, f["windows"]))
        g.check(m["ids"] == d["token_ids"] and m["ids"][0] == BOS and m["tokens"] == d["tokens"],
                "%s: the tokens are dump's, <bos> first as the template says: %s" % (name, m["tokens"][:4]))
        g.check("model_view_hint" in st["shown"], "%s: the toolbar says what a click does" % name)
        g.check(st["title"] == "model " + os.path.basename(folder.rstrip("/")),
                "%s: the menu bar and the window name the model shown (%r), not the lesson behind it" % (name, st["title"]))
        kv = texts(st, "kv-label")
        want_kv = ["K/V %d" % k for k in range(kv_heads)] if kv_heads < heads else []
        g.check(kv == want_kv, "%s: the heads grouped under %s (%s)" % (name, want_kv, kv))
        sliding = texts(st, "sliding")
        want_sliding = ["sliding W = %d" % w for w in windows if w > 0]
        g.check(sliding == want_sliding, "%s: sliding layers labelled %s (%s)" % (name, want_sliding, sliding))
        subtitle = " ".join(texts(st, "subtitle"))
        g.check(f["model_type"] in subtitle, "%s: the subtitle names the architecture (%s)" % (name, subtitle))
        # Ctrl+click: query head 0.1 ablated; the next tokens are dump --ablate 0.1's.
        x, y = g.center(g.settled_widget(lay, state, "thumb_0_1", p))

        def ctrl_click():
            g.xdo("mousemove", str(ox + x), str(oy + y))
            g.xdo("keydown", "ctrl")
            g.xdo("click", "1")
            g.xdo("keyup", "ctrl")
        ctrl_click()
        m = model("Ctrl+click ablates head 0.1", lambda m: m.get("ablated") == ["0.1"] and not m["busy"])["model"]
        ablated = g.model_dump(folder, TEXT, ["--ablate", "0.1"])
        want = [(t["id"], t["p"]) for t in ablated["next_token"]["top"]]
        got = [(t["id"], t["p"]) for t in m["next"]]
        g.check([i for i, _ in got] == [i for i, _ in want] and
                all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(got, want)),
                "%s: ablated, the next tokens are dump --ablate 0.1's (%s)" % (name, got[:2]))
        g.check(m.get("loss") is not None and m.get("clean_loss") is not None and m["loss"] != m["clean_loss"],
                "%s: ablated, the loss on the text %s beside the clean run's %s" %
                (name, m.get("loss"), m.get("clean_loss")))
        ctrl_click()
        model("Ctrl+click again restores it", lambda m: m.get("ablated") == [] and not m["busy"])
        g.click_widget(lay, state, "thumb_1_1", p, (ox, oy))
        model("head 1.1 large", lambda m: m["big"] == "1.1" and not m["busy"])
        g.wait_frames(state, 2, p)
        g.key("F12")
        capture = os.path.join(caps, name + "-model-view.png")
        g.check(g.wait_for_file(capture, proc=p), "%s: F12 saves %s" % (name, os.path.basename(capture)))
        g.stop(p)
    finally:
        if p.poll() is None:
            g.stop(p)
    final = g.read_json(state)["model"]
    # The screen's figure is render's for the app's canvas and font: F12 wrote render's bytes.
    out = os.path.join(tmp, name + "-render.png")
    r = g.run(["render", "--model", folder, "--text", TEXT, "--view", "model", "1.1", "--size",
               "%dx%d" % tuple(final["canvas"]), "--font", str(final["font"]), "-o", out])
    if g.check(r.returncode == 0, "%s: render --view model 1.1 (%s)" % (name, r.stderr.strip())) and os.path.exists(capture):
        g.check(digest(capture) == digest(out), "%s: F12 is the very file render --view model 1.1 --size %dx%d --font %g "
                "writes" % (name, final["canvas"][0], final["canvas"][1], final["font"]))
    # A screenshot with its sidecar: the thumbnails' cells against dump.
    r = g.run(["gui", "--model", folder, "--text", TEXT, "--exit-after-frames", "8", "--check-gl", "--no-restore",
               "--ignore-mouse", "--config-dir", tmp + "/c-" + name, "--state-dir", tmp + "/s-" + name,
               "--screenshot", shot] + SIZE)
    if g.check(r.returncode == 0, "%s: gui --screenshot, exit 0, no GL error (%s)" % (name, r.stderr.strip()[-300:])):
        check_thumbnails(name, g.read_json(shot + ".json"), d, windows)
    # A text longer than the context: no forward runs, and the panel still says what was opened.
    state = os.path.join(tmp, name + ".long.state.json")
    r = g.run(["gui", "--model", folder, "--text", "hello " * 200, "--exit-after-frames", "8", "--no-restore",
               "--ignore-mouse", "--config-dir", tmp + "/c-" + name, "--state-dir", tmp + "/s-" + name,
               "--state-out", state] + SIZE)
    st = g.read_json(state) if r.returncode == 0 else {"model": {}, "shown": []}
    m = st["model"]
    g.check("longer than the model's context" in m.get("text_error", "") and
            ": %d layers \u00d7 %d heads sharing %d K/V" % (layers, heads, kv_heads) in m.get("facts_line", ""),
            "%s: no forward yet (%s): the panel names the model (%s)" % (name, m.get("text_error"), m.get("facts_line")))
    # A head large on a 1280 x 800 window: the toolbar's buttons go to the next line rather than
    # past the window's edge.
    state = os.path.join(tmp, name + ".large.state.json")
    r = g.run(["gui", "--model", folder, "--text", TEXT, "--model-head", "1.1", "--exit-after-frames", "8",
               "--no-restore", "--ignore-mouse", "--config-dir", tmp + "/c-" + name, "--state-dir", tmp + "/s-" + name,
               "--state-out", state, "--width", "1280", "--height", "800"])
    wd = g.read_json(state)["widgets"] if r.returncode == 0 else {}
    inside = [w for w in ("model_sweep", "model_show_lens") if w in wd and wd[w][2] <= 1280]
    g.check(len(inside) == 2, "%s: head 1.1 large, 1280 x 800: Sweep and Logit lens inside the window (%s)" %
            (name, [wd.get(w) for w in ("model_sweep", "model_show_lens")]))


def check_errors_said_once():
    """A folder without tokenizer.json: the text's error in red under the text box only (the
    view points to it; the status bar keeps "Opened model"); with the panel hidden (C) the view
    says it itself. A model that does not open: the status bar's copy of its long error is cut
    with an ellipsis inside the window, the state keeping it whole."""
    folder = hf_folder(MODERN, "qwen3_f32", os.path.join(tmp, "no_tokenizer"))
    os.remove(os.path.join(folder, "tokenizer.json"))
    state = os.path.join(tmp, "no_tokenizer.state.json")
    lay = os.path.join(tmp, "no_tokenizer.layout.json")
    p = g.start(["gui", "--model", folder, "--text", "The cat sat", "--no-restore", "--config-dir", tmp + "/c-nt",
                 "--state-dir", tmp + "/s-nt", "--layout-out", lay, "--state-out", state, "--width", "1024",
                 "--height", "768"])
    try:
        g.wait_for_layout(lay, ["model_header"], proc=p)
        st = g.wait_state(state, "the text's error", lambda j: j["model"]["error"] and j["model"]["waiting"], p)
        m = st["model"]
        said = "is not a token of this model"
        g.check(said in m["text_error"] and m["error"] == m["text_error"],
                "no tokenizer.json: the text's error under the text box (%r)" % m["text_error"][:60])
        g.check("model_view_hint" not in st["shown"], "no tokenizer.json: no 'click a head' hint with no head shown")
        g.check("does not tokenize" in m["waiting"] and said not in m["waiting"] and said not in st["status"],
                "no tokenizer.json: the view points to the text box (%r), the status bar does not repeat the error "
                "(%r)" % (m["waiting"], st["status"]))
        g.focus_window()
        g.key("c")
        st = g.wait_state(state, "the panel hidden", lambda j: not j["show_controls"] and j["model"]["waiting"], p)
        g.check(st["model"]["waiting"] == m["error"], "panel hidden: the view says the error itself (%r)" %
                st["model"]["waiting"][:60])
        g.stop(p)
    finally:
        if p.poll() is None:
            g.stop(p)
    state = os.path.join(tmp, "bad_type.state.json")
    r = g.run(["gui", "--model", os.path.join(MODERN, "bad", "config_unknown_model_type"), "--exit-after-frames", "8",
               "--no-restore", "--ignore-mouse", "--config-dir", tmp + "/c-bt", "--state-dir", tmp + "/s-bt",
               "--state-out", state, "--width", "1024", "--height", "768"])
    st = g.read_json(state) if r.returncode == 0 else {"status": "", "widgets": {}, "model": {}}
    wd = st["widgets"].get("status", [0, 0, 1e9, 0])
    g.check("(supported: qwen3" in st["status"] and wd[2] <= 1024 and "did not open" in st["model"].get("waiting", ""),
            "unknown model_type, 1024 px: the status bar's error inside the window (%s), whole in the state; the "
            "view points to the panel (%r)" % (wd, st["model"].get("waiting")))


check_errors_said_once()
for name, layers, heads, kv_heads, windows in (("qwen3_f32", 3, 4, 2, [0, 0, 0]), ("gemma3_f32", 3, 4, 2, [4, 4, 0])):
    check_model(name, hf_folder(MODERN, name, os.path.join(tmp, name)), layers, heads, kv_heads, windows)

g.finish()
