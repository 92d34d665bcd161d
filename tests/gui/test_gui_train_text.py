"""The Train view's text task as a user drives it, under Xvfb with xdotool: "text" among the
tasks shows a path field; Start stays disabled while the file cannot be trained on, and the view
says why in one line naming the file (missing, a folder, empty, binary, too short for one
batch); a good file enables it; the run trains on the text (its vocabulary the text's
characters), shows every head on the start of the text with its characters as labels, plots
the overall loss only (no first-occurrence or copy curves: a text has neither), and Pause writes
a checkpoint whose config.json holds the characters. Every wait is on the state the app writes
(--state-out), never a fixed sleep.

usage (under xvfb-run): test_gui_train_text.py PATH/TO/mhaviz [data dir]
"""
import json
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
lay = os.path.join(tmp, "layout.json")
state = os.path.join(tmp, "state.json")
files = os.path.join(tmp, "texts")
os.makedirs(files)
STORY = "".join("Once upon a time a small model read a story, line %d.\n" % k for k in range(40))


def text_file(name, data):
    path = os.path.join(files, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def train(j):
    return j["train"]


def start_enabled(j):
    """Start is drawn enabled when the layout lists it as clickable (not disabled)."""
    return "train_start" not in j.get("disabled", [])


caps = os.path.join(tmp, "captures")
p = g.start(["gui", "--no-restore", "--train", "--capture-dir", caps, "--config-dir", os.path.join(tmp, "cfg"), "--state-dir",
             os.path.join(tmp, "st"), "--width", "1280", "--height", "800", "--layout-out", lay, "--state-out", state])
try:
    g.wait_for_layout(lay, ["train_task_text"], proc=p)
    win = g.read_json(lay)
    origin = (win["window_x"], win["window_y"])
    g.focus_window()

    def click(name):
        g.click_widget(lay, state, name, p, origin)

    click("train_task_text")
    st = g.wait_state(state, "the text task chosen", lambda j: train(j)["task"] == "text" and train(j)["text"]["checked"], p)
    g.check(train(st)["text"]["error"] == "text: choose a text file" and not train(st)["start_enabled"],
            "no file yet: Start disabled, the view says to choose one (%s)" % train(st)["text"]["error"])

    def choose(path):
        click("train_text")
        g.key("ctrl+a")
        g.key("BackSpace")
        g.type_text(path)
        g.key("Tab")
        return g.wait_state(state, "the file %s checked" % os.path.basename(path),
                            lambda j: train(j)["text"]["path"] == path and train(j)["text"]["checked"], p)

    bad = [
        (os.path.join(files, "missing.txt"), "cannot read"),
        (files, "is a folder"),
        (text_file("empty.txt", b""), "is empty"),
        (text_file("image.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "is not UTF-8 text"),
        (text_file("nul.txt", b"text with a\x00NUL byte in it"), "is not text"),
        (text_file("short.txt", b"Too short for a batch."), "too few for one batch"),
    ]
    for path, why in bad:
        t = train(choose(path))
        e = t["text"]["error"]
        g.check(path in e and why in e and "\n" not in e and not t["start_enabled"],
                "%s: Start disabled, one line naming the file and why (%s)" % (os.path.basename(path), e))
        g.check("train_text_error" in g.read_json(lay)["shown"], "the reason is shown in the view")

    story = text_file("story.txt", STORY.encode())
    t = train(choose(story))
    chars = sorted(set(STORY))
    g.check(t["text"]["error"] == "" and t["start_enabled"] and t["text"]["vocab"] == len(chars) and
            t["text"]["tokens"] == len(STORY),
            "a story of %d characters, %d distinct: Start enabled" % (t["text"]["tokens"], t["text"]["vocab"]))

    click("train_start")
    # Training is compute, not the UI: a sanitizer build trains 30–40 times slower, and gets
    # four deadlines for it (as gui_train).
    wait = g.WAIT_SECONDS * (1 if os.environ.get("MHAVIZ_JUDGE_SPEED") == "1" else 4)
    st = g.wait_state(state, "trained 30 steps on the text", lambda j: train(j).get("step", 0) >= 30, p, wait)
    t = train(st)
    want = ["\u2423" if c == " " else "\\n" if c == "\n" else c for c in STORY[:32]]
    g.check(t["probe_names"] == want, "the heads are shown on the start of the text, its characters as labels (%s)" %
            "".join(t["probe_names"][:12]))
    g.check(t["loss_first"] is None and t["loss_repeat"] is None and t["loss"] is not None,
            "a text's loss is overall only (no first-occurrence or copy halves)")
    prims = st["figure"]["display_list"]["prims"]
    texts = [q.get("text", "") for q in prims]
    g.check(any("story.txt (characters)" in x for x in texts), "the figure names the file and its tokens")
    g.check(not any("copy" in x for x in texts if x) and any(x == "every position" for x in texts),
            "the loss plot's legend has the overall loss only")
    click("train_pause")
    st = g.wait_state(state, "paused, the checkpoint written",
                      lambda j: not train(j)["running"] and train(j)["saved_step"] == train(j)["step"], p)
    ck = train(st)["checkpoint"]
    # F12: the Train view's figure, named after the run and its step (kept to be looked at).
    g.key("F12")
    pngs = g.wait_until("F12's capture written", lambda: [n for n in os.listdir(caps) if n.endswith(".png")]
                        if os.path.isdir(caps) else [], lambda v: len(v) == 1, proc=p)
    g.check(pngs[0].startswith("text-") and pngs[0].endswith("-train.png"), "F12 captured the text run (%s)" % pngs[0])
    with open(os.path.join(os.path.dirname(ck), "config.json")) as f:
        config = json.load(f)
    g.check(config.get("char_vocab") == chars and config["vocab_size"] == len(chars),
            "the checkpoint's config.json holds the text's %d characters" % len(chars))
    g.check(os.path.basename(os.path.dirname(ck)).startswith("text-"), "the run's folder is named after its task")
    status, _, err = g.stop(p)
    g.check(status == 0, "the app closes (exit %s: %s)" % (status, err.strip()[-200:]))
finally:
    if p.poll() is None:
        g.stop(p)
g.finish()
