"""Issue 13 as a teacher met it, with real input (xdotool) and kill -9:

[loss]    1e9 typed into a cell and a 300-character token are refused where they were typed,
          with the session format's own message; Ctrl+S then saves; kill -9 and a restart
          bring back every valid edit made before.
[recover] an autosave the format refuses (as an older build could write) is never
          discarded: it is moved aside, the app says where, and offers what can be
          recovered, which opens with every other value as it was.
[undo]    Ctrl+Z, Ctrl+Shift+Z, Ctrl+Y and the Edit menu (which names the edit) over a drag
          (one step), typed tokens and a lesson switch; undo, then kill -9: the restart
          shows the undone state.
[keys]    a sentence typed with no field active goes to the tokens field and fires no
          shortcut; a lone key still does; in a text field no shortcut fires; Space pauses
          the walkthrough on a whole step.

usage (under xvfb-run): test_gui_edit.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
DATA = sys.argv[2]
lesson = g.read_json(os.path.join(DATA, "reference", "sessions", "seed003-wrapper.json"))
SIZE = ["--width", "1280", "--height", "800", "--check-gl"]


def dirs(name):
    return ["--config-dir", os.path.join(tmp, name, "cfg"), "--state-dir", os.path.join(tmp, name, "st")]


def xtype(text, delay_ms=40):
    """Characters as a typist sends them (xdotool type): each is a char event, not a held key.
    Returns once the app of the current section (its state file and process) received them all."""
    g.type_text(text, delay_ms, globals().get("state"), globals().get("proc"))


def double_click_to_type(x, y, state, proc, tries=3):
    """Double-clicks a value so that it takes typing: the clicks 80 ms apart, within ImGui's
    0.3 s (of its clock, which follows queued input: slow frames do not stretch it). An app
    starved of the CPU may poll the two clicks more than 0.3 s apart, which is two single
    clicks: then, as a user would, double-click again (printed)."""
    was = g.settle(state, proc)["text_input"]
    for attempt in range(tries):
        g.xdo("mousemove", x, y, "click", "--repeat", 2, "--delay", 80, 1)
        if was or g.settle(state, proc)["text_input"]:
            break
        print("note: double-click %d on (%d, %d) taken as two clicks; double-clicking again" % (attempt + 1, x, y),
              flush=True)
    return not was and g.wait_state(state, "a double-click makes the value take typing", lambda j: j["text_input"],
                                    proc)["text_input"]


def layout_value(path, key, want, what, proc=None):
    """Waits until the file's `key` satisfies want; returns that value."""
    return g.wait_state(path, what, lambda j: want(j.get(key)), proc)[key]


def read_or_none(path):
    try:
        return g.read_json(path)
    except (OSError, ValueError):
        return None


def wait_autosave(auto, want, what, proc=None):
    """Waits until the autosave file satisfies want; returns it."""
    return g.wait_state(auto, "autosave: " + what, want, proc)


def kill9(proc):
    """SIGKILL, as a crash or a power cut would end the app; True when that is how it ended."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=g.WAIT_SECONDS)
    return proc.returncode == -9


def start_app(session, name, layout, state, widgets=("tokens",), extra=()):
    """The app on a session (no autosave restored), its input window focused; (proc, widgets)."""
    proc = g.start(["gui", session, "--no-restore", "--layout-out", layout, "--state-out", state] + list(extra) +
                   dirs(name) + SIZE)
    w = g.wait_for_layout(layout, list(widgets), proc=proc)
    g.focus_window()
    return proc, w


def restart_state(name, extra=()):
    state = os.path.join(tmp, name + "-restart.json")
    r = g.run(["gui", "--exit-after-frames", "12", "--state-out", state] + dirs(name) + SIZE + list(extra))
    return r, (read_or_none(state) or {})


# [SECTION] [loss] The exact sequence of the issue, then kill -9
name = "loss"
auto = os.path.join(tmp, name, "st", "autosave.json")
layout = os.path.join(tmp, "loss-layout.json")
state = os.path.join(tmp, "loss-state.json")
saved = os.path.join(tmp, "saved.json")
proc = g.start(["gui", "--layout-out", layout, "--state-out", state] + dirs(name) + SIZE)
try:
    w = g.wait_for_layout(layout, ["tokens", "embedding0_0"], proc=proc)
    g.focus_window()
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" zebra")
    g.click(5, 795)  # leave the field
    a = wait_autosave(auto, lambda a: a["tokens"][-1] == "zebra", "zebra", proc)
    g.check(a is not None and a["tokens"][-1] == "zebra", "[loss] a valid edit (zebra) is autosaved")

    # Double-click the x0 cell of "Your", type 1e9, Enter.
    g.check(double_click_to_type(*g.center(w["embedding0_0"]), state, proc),
            "[loss] a double-click on x0 of Your takes typing")
    xtype("1e9")
    g.key("Return")
    refusal = layout_value(layout, "refusal", lambda v: v and "embeddings[0][0]" in v, "1e9 refused", proc)
    g.check(refusal is not None and "embeddings[0][0]: 1e+09 is not a finite number within ±1e6" in refusal,
            "[loss] 1e9 in a cell is refused with the format's message where it was typed: %r" % refusal)
    w = g.wait_for_layout(layout, ["refusal"], proc=proc)
    g.check(w["refusal"][1] < w["embedding0_0"][1],
            "[loss] the reason is shown at the table (above its rows, y %d < %d)" % (w["refusal"][1], w["embedding0_0"][1]))

    # Ctrl+S: a lesson has no file yet, so Save As asks for one; the save succeeds.
    g.key("ctrl+s")
    w = g.wait_for_layout(layout, ["dialog_path"], proc=proc)
    g.wait_dialog_field(state, proc)
    xtype(saved, 10)
    g.key("Return")
    g.wait_for_file(saved, proc)
    s = read_or_none(saved)
    g.check(s is not None and s["embeddings"][0][0] == lesson["embeddings"][0][0] and s["tokens"][-1] == "zebra",
            "[loss] Ctrl+S then saves, with the refused value not in it: %s" % (s and s["embeddings"][0]))

    # More valid typing, autosaved; then a 300-character token: refused at the field.
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" yak")
    g.click(5, 795)
    a = wait_autosave(auto, lambda a: a["tokens"][-1] == "yak", "yak", proc)
    g.check(a is not None and a["tokens"][-1] == "yak", "[loss] the next valid edit (yak) is autosaved")
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" " + "q" * 300, 4)
    refusal = layout_value(layout, "refusal", lambda v: v and "300 bytes" in v, "the long token refused", proc)
    g.check(refusal is not None and "token of 300 bytes is over the limit of 256" in refusal,
            "[loss] a 300-character token is refused at the tokens field: %r" % refusal)
    g.check(kill9(proc), "[loss] the app ran until kill -9 ended it")
finally:
    kill9(proc)

r, st = restart_state(name)
toks = st.get("session", {}).get("tokens", [])
g.check(r.returncode == 0, "[loss] the restart exits 0 (%s)" % r.stderr.strip())
g.check("Restored" in st.get("status", ""), "[loss] the restart restores the autosave: %r" % st.get("status"))
g.check(toks[:len(lesson["tokens"])] == lesson["tokens"] and "zebra" in toks and "yak" in toks,
        "[loss] every valid edit made before the kill is back: %s" % [t[:12] for t in toks])
g.check(all(len(t.encode()) <= 256 for t in toks), "[loss] no token over 256 bytes was ever held")
emb = st.get("session", {}).get("embeddings", [[None]])
g.check(emb[0][0] == lesson["embeddings"][0][0], "[loss] the refused 1e9 never reached the session (%s)" % emb[0][0])

# [SECTION] [recover] A refused autosave is kept aside and offered
name = "recover"
st_dir = os.path.join(tmp, name, "st")
os.makedirs(st_dir)
bad = dict(lesson)
bad["tokens"] = list(lesson["tokens"]) + ["w" * 300]
bad["embeddings"] = [list(r) for r in lesson["embeddings"]] + [[0.1, 0.2, 0.3]]
bad["embeddings"][0][0] = 1e9
bad["model"] = dict(lesson["model"], context_length=7)
bad_text = json.dumps(bad)
with open(os.path.join(st_dir, "autosave.json"), "w") as f:
    f.write(bad_text)
with open(os.path.join(st_dir, "autosave-meta.json"), "w") as f:
    json.dump({"path": "", "origin": "lesson seed003-wrapper", "modified": True}, f)
layout = os.path.join(tmp, "recover-layout.json")
state = os.path.join(tmp, "recover-state.json")
proc = g.start(["gui", "--layout-out", layout, "--state-out", state] + dirs(name) + SIZE)
try:
    g.wait_for_layout(layout, ["recover_open", "recover_dismiss"], proc=proc)
    g.focus_window()
    g.click(*g.center(g.settled_widget(layout, state, "recover_open", proc)))
    g.wait_state(state, "the recovered session opened", lambda j: j["dialog"] == 0 and j["modified"] and
                 j["session"]["tokens"][6:] == ["w" * 256], proc)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
kept = st.get("restore", {}).get("kept_at", "")
g.check(rc == 0, "[recover] exits 0 (%s)" % err.strip())
g.check(os.path.dirname(kept) == st_dir and os.path.basename(kept).startswith("autosave-refused-"),
        "[recover] the refused file is kept beside the autosave: %s" % kept)
g.check(os.path.exists(kept) and open(kept).read() == bad_text, "[recover] it is kept byte for byte")
g.check(kept != "" and "kept at " + kept in st.get("status", ""), "[recover] the app says where: %r" % st.get("status"))
rep = st.get("restore", {}).get("repairs", [])
g.check(any("embeddings[0][0]: 1e+09 clamped to 1e+06" in x for x in rep) and any("300 bytes cut to 256" in x for x in rep),
        "[recover] the dialog lists what recovering changes: %s" % rep)
ses = st.get("session", {})
g.check(ses.get("tokens", [])[:6] == lesson["tokens"] and ses.get("tokens", [""] * 7)[6] == "w" * 256,
        "[recover] 'Open what can be recovered' opened it: tokens %s" % [t[:10] for t in ses.get("tokens", [])])
g.check(ses.get("embeddings", [[0]])[0][0] == 1e6 and ses.get("embeddings", [])[1:6] == lesson["embeddings"][1:6],
        "[recover] the bad value is clamped and every other value is as it was")
g.check(st.get("modified") is True, "[recover] the recovered session is marked unsaved")
a = read_or_none(os.path.join(st_dir, "autosave.json"))
g.check(a is not None and a["tokens"] == ses.get("tokens"), "[recover] and autosaved as a valid session")

# "Keep the lesson" (Escape): the refused file stays where the dialog said, and the next
# autosave (after an edit) is written beside it, never over it.
name = "recover2"
st_dir = os.path.join(tmp, name, "st")
os.makedirs(st_dir)
with open(os.path.join(st_dir, "autosave.json"), "w") as f:
    f.write(bad_text)
layout = os.path.join(tmp, "recover2-layout.json")
state = os.path.join(tmp, "recover2-state.json")
proc = g.start(["gui", "--layout-out", layout, "--state-out", state] + dirs(name) + SIZE)
try:
    g.wait_for_layout(layout, ["recover_dismiss"], proc=proc)
    g.focus_window()
    g.key("Escape")
    g.wait_state(state, "Escape keeps the lesson", lambda j: j["dialog"] == 0, proc)
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" kept")
    g.click(5, 795)
    a = wait_autosave(os.path.join(st_dir, "autosave.json"), lambda a: a["tokens"][-1] == "kept", "kept", proc)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
kept = st.get("restore", {}).get("kept_at", "")
g.check(st.get("session", {}).get("tokens") == lesson["tokens"] + ["kept"],
        "[recover] Escape keeps the lesson, which is edited as usual")
g.check(a is not None and a["tokens"][-1] == "kept" and os.path.exists(kept) and open(kept).read() == bad_text,
        "[recover] the new autosave is written beside the refused file, which stays byte for byte: %s" % kept)

# [SECTION] [undo] Undo and redo, then kill -9
name = "undo"
auto = os.path.join(tmp, name, "st", "autosave.json")
layout = os.path.join(tmp, "undo-layout.json")
state = os.path.join(tmp, "undo-state.json")
proc = g.start(["gui", "--layout-out", layout, "--state-out", state] + dirs(name) + SIZE)


def edit_menu(combo, want, what):
    """A key (None: none), then the Edit menu's labels once want holds (each key is seen once:
    an undo applied twice would leave another label)."""
    if combo:
        g.key(combo)
    return layout_value(layout, "edit_menu", want, what, proc)


try:
    w = g.wait_for_layout(layout, ["d_out", "tokens", "menu_lessons", "menu_edit"], proc=proc)
    g.focus_window()
    menu = edit_menu(None, lambda v: v is not None, "the Edit menu's labels")
    g.check(menu == "Undo|Redo", "[undo] nothing to undo at the start: %r" % menu)
    x0, y0, x1, y1 = w["d_out"]
    cy = int((y0 + y1) / 2)
    g.drag(int(x0 + (x1 - x0) * 0.1), cy, int(x0 + (x1 - x0) * 0.5), cy, steps=10)  # many values, one drag
    menu = edit_menu(None, lambda v: v and v.startswith("Undo change d_out"), "the drag named")
    g.check(menu == "Undo change d_out|Redo", "[undo] the Edit menu names the drag: %r" % menu)
    menu = edit_menu("ctrl+z", lambda v: v and "Redo change d_out" in v, "Ctrl+Z undoes the drag")
    g.check(menu == "Undo|Redo change d_out", "[undo] one Ctrl+Z took back the whole drag: %r" % menu)
    menu = edit_menu("ctrl+shift+z", lambda v: v and v.startswith("Undo change d_out"), "Ctrl+Shift+Z redoes it")
    g.check(menu == "Undo change d_out|Redo", "[undo] Ctrl+Shift+Z redid it: %r" % menu)
    edit_menu("ctrl+z", lambda v: v and "Redo change d_out" in v, "Ctrl+Z undoes it again")
    menu = edit_menu("ctrl+y", lambda v: v and v.startswith("Undo change d_out"), "Ctrl+Y redoes it")
    g.check(menu == "Undo change d_out|Redo", "[undo] Ctrl+Z then Ctrl+Y: redone again: %r" % menu)

    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" zebra ox")
    g.click(5, 795)
    menu = edit_menu(None, lambda v: v and v.startswith("Undo edit tokens"), "the typing is a step")
    g.check(menu == "Undo edit tokens|Redo", "[undo] typing in the field is one step: %r" % menu)

    # A lesson switch (asks first: the lesson has unsaved changes), then undo it.
    g.click(*g.center(w["menu_lessons"]))
    g.click(*g.center(g.settled_widget(layout, state, "lesson_book-weight-split-3d", proc)))
    # A popup sizes itself over its first frames: click where it settled.
    g.click_until(layout, state, "open_discard", lambda j: j["dialog"] == 0, proc)
    menu = edit_menu(None, lambda v: v and v.startswith("Undo open lesson book"), "the lesson switch is a step")
    g.check(menu == "Undo open lesson book-weight-split-3d|Redo", "[undo] the lesson switch is a step: %r" % menu)
    edit_menu("ctrl+z", lambda v: v and v.startswith("Undo edit tokens"), "Ctrl+Z: the edited lesson")
    menu = edit_menu("ctrl+z", lambda v: v and v.startswith("Undo change d_out"), "Ctrl+Z: before the typing")
    g.check(menu == "Undo change d_out|Redo edit tokens", "[undo] two undos: before the typing: %r" % menu)
    a = wait_autosave(auto, lambda a: a["tokens"] == lesson["tokens"] and a["model"]["d_out"] != 2,
                      "the lesson's tokens, d_out dragged", proc)
    g.check(a is not None and a["tokens"] == lesson["tokens"] and a["model"]["d_out"] != 2,
            "[undo] the autosave follows the undo: %s d_out %s" % (a and a["tokens"], a and a["model"]["d_out"]))
    undone_d_out = a["model"]["d_out"] if a else None
    g.check(kill9(proc), "[undo] the app ran until kill -9 ended it")
finally:
    kill9(proc)
r, st = restart_state(name)
ses = st.get("session", {})
g.check(ses.get("tokens") == lesson["tokens"] and ses.get("model", {}).get("d_out") == undone_d_out,
        "[undo] after kill -9 the restart shows the undone state: %s d_out %s" %
        (ses.get("tokens"), ses.get("model", {}).get("d_out")))

# [SECTION] [keys] Typing with nothing focused; keys in a field; Space pause
name = "keys"
layout = os.path.join(tmp, "keys-layout.json")
state = os.path.join(tmp, "keys-state.json")
proc, w = start_app("seed003-wrapper", name, layout, state, ["tokens"])
try:
    g.click(5, 795)
    xtype("we cut the cake", 30)  # w, e, c, space and 1-5 are shortcuts when alone
    g.click(5, 795)
    g.wait_state(state, "the sentence in the tokens", lambda j: j["session"]["tokens"][-4:] == ["we", "cut", "the", "cake"],
                 proc)
    g.settle(state, proc)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
toks = st.get("session", {}).get("tokens", [])
g.check(toks == lesson["tokens"] + ["we", "cut", "the", "cake"], "[keys] the sentence went to the tokens field: %s" % toks)
g.check(st.get("enlarged") is False and st.get("show_controls") is True and st.get("walk", {}).get("cells", 0) == 0,
        "[keys] and fired no shortcut (enlarged %s, controls %s, walkthrough cells %s)" %
        (st.get("enlarged"), st.get("show_controls"), st.get("walk", {}).get("cells")))

state = os.path.join(tmp, "keys-state2.json")
proc, w = start_app("seed003-wrapper", name, layout, state, ["tokens"])
try:
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    g.key("e")  # held keys, one by one, in the field: text, not shortcuts
    g.key("c")
    g.key("2")
    g.click(5, 795)
    g.key("e")  # a lone key with nothing focused: the shortcut
    g.wait_state(state, "E enlarges the head", lambda j: j["enlarged"], proc)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
g.check(st.get("session", {}).get("tokens", [])[-1:] == ["stepec2"], "[keys] keys typed in the field are text: %s" %
        st.get("session", {}).get("tokens"))
g.check(st.get("stage") == "weights" and st.get("show_controls") is True,
        "[keys] no shortcut fired while the field was active (stage %s, controls %s)" % (st.get("stage"),
                                                                                    st.get("show_controls")))
g.check(st.get("enlarged") is True, "[keys] a lone E with nothing focused still enlarges the head")

# Space pauses the walkthrough between two steps: it settles on a whole step.
state = os.path.join(tmp, "keys-state3.json")
proc, w = start_app("seed003-wrapper", name, layout, state, ["walk_play"], ["--walkthrough", "2"])
try:
    g.click(5, 795)
    g.key("space")
    pos = layout_value(layout, "walk", lambda v: v and 2.05 < v["pos"] < 2.9, "Space plays the walkthrough", proc)
    g.key("space")
    g.wait_state(state, "Space pauses it on a whole step",
                 lambda j: not j["walk"]["playing"] and j["walk"]["pos"] == j["walk"]["target"], proc)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
wk = st.get("walk", {})
g.check(pos is not None and 2.0 < pos["pos"] < 3.0, "[keys] Space played the walkthrough (pos %s)" % (pos and pos["pos"]))
g.check(wk.get("playing") is False and wk.get("pos") == wk.get("target") and float(wk.get("pos", 0.5)).is_integer(),
        "[keys] Space paused it on a whole step (pos %s, target %s)" % (wk.get("pos"), wk.get("target")))

# [SECTION] [sliders] d_out by sensible steps, typed with Ctrl+click, to the documented 8192
name = "sliders"
layout = os.path.join(tmp, "sliders-layout.json")
state = os.path.join(tmp, "sliders-state.json")
proc, w = start_app("seed003-wrapper", name, layout, state, ["d_out"])
try:
    x0, y0, x1, y1 = w["d_out"]
    cy = int((y0 + y1) / 2)
    g.drag(int(x0 + 4), cy, int(x0 + 4 + (x1 - x0) * 0.08), cy, steps=3)  # a small drag from the left end
    g.click(5, 795)
    a = wait_autosave(os.path.join(tmp, name, "st", "autosave.json"), lambda a: a["model"]["d_out"] != 2,
                      "d_out dragged", proc)
    g.check(a is not None and 1 <= a["model"]["d_out"] <= 8,
            "[sliders] a small drag moves d_out by a few sizes, not hundreds: %s" % (a and a["model"]["d_out"]))

    def ctrl_click_type(rect, text, done, what):
        """Ctrl+click a slider, type the value once its field has the keyboard, Enter; then
        waits for done(state) with the field left."""
        g.xdo("keydown", "ctrl")
        g.click(*g.center(rect))
        g.xdo("keyup", "ctrl")
        g.wait_state(state, "Ctrl+click: the slider takes typing", lambda j: j["text_input"], proc)
        xtype(text)
        g.key("Return")
        g.wait_state(state, what, lambda j: done(j) and not j["text_input"], proc)

    ctrl_click_type(w["d_out"], "8192", lambda j: j["session"]["model"]["d_out"] == 8192, "d_out typed as 8192")
    ctrl_click_type(w["d_out"], "9000", lambda j: "9000" in j["refusal"], "d_out 9000 refused")
    refusal = layout_value(layout, "refusal", lambda v: v and "9000" in v, "9000 refused", proc)
    g.check(refusal == "model.d_out: 9000 is out of range [1, 8192] (not applied)",
            "[sliders] d_out typed past the documented limit is refused, naming it: %r" % refusal)
    w = g.wait_for_layout(layout, ["num_heads"], proc=proc)
    # wrapper: 4 heads of 8192 would be 32768 features
    ctrl_click_type(w["num_heads"], "4", lambda j: "num_heads" in j["refusal"], "num_heads 4 refused")
    refusal = layout_value(layout, "refusal", lambda v: v and "num_heads" in v, "num_heads 4 refused", proc)
    g.check(refusal is not None and refusal.startswith("model.num_heads: 4 heads of d_out 8192"),
            "[sliders] num_heads can be typed, and is refused with the reason: %r" % refusal)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
m = st.get("session", {}).get("model", {})
g.check(m.get("d_out") == 8192 and m.get("num_heads") == 1,
        "[sliders] Ctrl+click typed d_out 8192 (the README's limit), one head fits: %s" % m)
g.check(st.get("undo") == "change d_out", "[sliders] typed values are undo steps: %r" % st.get("undo"))

# [SECTION] [stages] Masked without the mask, dropout in eval mode or at p = 0 say so
for lesson_name, stage, note in (("seed002-fused-qkv-encoder", "masked", True), ("seed003-wrapper", "masked", False),
                                 ("seed003-wrapper", "dropped", True), ("journey-dropout-half", "dropped", False)):
    layout = os.path.join(tmp, "stage-layout.json")
    if os.path.exists(layout):
        os.remove(layout)
    r = g.run(["gui", lesson_name, "--no-restore", "--stage", stage, "--exit-after-frames", "8", "--layout-out", layout] +
              dirs("stages") + SIZE)
    w = (read_or_none(layout) or {}).get("widgets", {})
    g.check(r.returncode == 0 and ("stage_note" in w) == note and "tokens" in w,
            "[stages] %s at %s %s that nothing changed" % (lesson_name, stage, "says" if note else "does not say"))

# [SECTION] [table] Every column reachable, long tokens elided, the panel resizable
name = "table"
layout = os.path.join(tmp, "table-layout.json")
state = os.path.join(tmp, "table-state.json")
proc, w = start_app("seed003-weight-split-6d", name, layout, state, ["tokens", "embedding_table", "embedding0_last",
                                                                     "left_edge"])
try:
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" extraordinarily")
    g.click(5, 795)
    cells = layout_value(layout, "token_cells", lambda v: v and len(v) == 4, "the fourth token's cell", proc)
    g.check(cells is not None and cells[3].endswith("\u2026") and "extraordinarily".startswith(cells[3][:-1]) and
            len(cells[3]) < 15, "[table] a long token is elided in the table: %s" % cells)
    w = g.wait_for_layout(layout, ["embedding_table", "embedding0_last"], proc=proc)
    table_x1 = w["embedding_table"][2]
    g.check(w["embedding0_last"][2] > table_x1, "[table] with d_in 6 the last column starts out of sight (%d > %d)" %
            (w["embedding0_last"][2], table_x1))
    # Scroll right (button 7: the horizontal wheel), twelve notches.
    g.xdo("mousemove", int((w["embedding_table"][0] + table_x1) / 2), int(w["embedding_table"][1] + 40),
          "click", "--repeat", 12, "--delay", 10, 7)
    w = g.wait_state(layout, "x5 scrolled into the table", lambda j: j["widgets"]["embedding0_last"][2] <= table_x1,
                     proc)["widgets"]
    g.check(w["embedding0_last"][2] <= table_x1, "[table] scrolling sideways brings x5 into the table (%d <= %d)" %
            (w["embedding0_last"][2], table_x1))
    g.check(double_click_to_type(*g.center(w["embedding0_last"]), state, proc), "[table] x5 takes typing")
    xtype("0.5")
    g.key("Return")
    g.wait_state(state, "0.5 typed into x5", lambda j: j["session"]["embeddings"][0][5] == 0.5 and not j["text_input"],
                 proc)
    # The panel's edge: drag it 200 pixels to the right.
    before = w["tokens"][2] - w["tokens"][0]
    x0, y0, x1, y1 = w["left_edge"]
    g.drag(int((x0 + x1) / 2), int((y0 + y1) / 2), int((x0 + x1) / 2) + 200, int((y0 + y1) / 2), steps=6)
    w = g.wait_state(layout, "the panel widened", lambda j: j["widgets"]["tokens"][2] - j["widgets"]["tokens"][0] >
                     before + 150, proc)["widgets"]
    after = w["tokens"][2] - w["tokens"][0]
    g.check(after > before + 150, "[table] dragging the panel's edge widens it (%d -> %d px)" % (before, after))
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
emb = st.get("session", {}).get("embeddings", [[0] * 6])
g.check(emb[0][5] == 0.5, "[table] the value typed into x5 is in the session (%s)" % emb[0])

# [SECTION] [files] Open and Save with the keyboard alone: folders, .json files, a typed path
name = "files"
folder = os.path.join(tmp, "lessons-folder")
os.makedirs(os.path.join(folder, "sub"))
with open(os.path.join(folder, "a.json"), "w") as f:
    json.dump(dict(lesson, tokens=["Alpha"] + lesson["tokens"][1:]), f)
with open(os.path.join(folder, "notes.txt"), "w") as f:
    f.write("not a session")
layout = os.path.join(tmp, "files-layout.json")
state = os.path.join(tmp, "files-state.json")
proc, w = start_app("seed003-wrapper", name, layout, state)
try:
    g.click(5, 795)
    g.key("ctrl+o")
    g.wait_dialog_field(state, proc)
    g.key("ctrl+a")
    xtype(folder, 10)  # a folder typed, Enter: the dialog shows it
    g.key("Return")
    rows = layout_value(layout, "browse_rows", lambda v: v and "a.json" in v, "the folder listed", proc)
    g.check(rows == ["..", "sub/", "a.json"], "[files] the folder's subfolders and .json files, not the rest: %s" % rows)
    g.check(layout_value(layout, "text_input", lambda v: v is True, "the path field has the keyboard", proc) is True,
            "[files] the path field has the keyboard again")
    for _ in range(3):
        g.key("Down")  # .., sub/, a.json
    g.key("Return")
    g.wait_state(state, "a.json opened", lambda j: j["session"]["tokens"][0] == "Alpha" and j["dialog"] == 0, proc)
    g.key("ctrl+shift+s")  # Save As starts in the folder of the file
    g.wait_dialog_field(state, proc)
    g.key("ctrl+a")
    xtype("b.json", 20)
    g.key("Return")
    g.wait_for_file(os.path.join(folder, "b.json"), proc)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
g.check(st.get("session", {}).get("tokens", [""])[0] == "Alpha", "[files] Down, Down, Down, Enter opened a.json")
b = read_or_none(os.path.join(folder, "b.json"))
g.check(b is not None and b["tokens"][0] == "Alpha" and st.get("path") == os.path.join(folder, "b.json"),
        "[files] a name typed in Save As is saved in the folder shown: %s" % st.get("path"))

# [SECTION] [view] What is shown is saved with the session (version 2) and comes back
name = "view"
auto = os.path.join(tmp, name, "st", "autosave.json")
layout = os.path.join(tmp, "view-layout.json")
saved = os.path.join(tmp, "view.json")
state = os.path.join(tmp, "view-state.json")
proc = g.start(["gui", "seed003-wrapper", "--no-restore", "--layout-out", layout, "--state-out", state] + dirs(name) +
               SIZE)
try:
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
    g.focus_window()
    g.click(5, 795)
    # Lone keys are shortcuts once no other follows within 0.3 s: each waits for the last to act.
    g.key("2")
    g.wait_state(state, "2: masked", lambda j: j["stage"] == "masked", proc)
    g.key("bracketright")
    g.wait_state(state, "]: head 1", lambda j: j["head"] == 1, proc)
    g.key("e")
    a = wait_autosave(auto, lambda a: a.get("view", {}).get("enlarged") is True, "the view, enlarged", proc)
    g.check(a is not None and a["version"] == 2 and a["view"]["stage"] == "masked" and a["view"]["head"] == 1,
            "[view] a change of view alone is autosaved, as version 2: %s" % (a and a.get("view")))
    g.key("ctrl+s")
    g.wait_dialog_field(state, proc)
    xtype(saved, 10)
    g.key("Return")
    g.wait_for_file(saved, proc)
    g.check(kill9(proc), "[view] kill -9")
finally:
    kill9(proc)
s = read_or_none(saved) or {}
g.check(s.get("version") == 2 and s.get("view", {}).get("stage") == "masked" and s["view"].get("enlarged") is True,
        "[view] the saved file holds the view: %s" % s.get("view"))
r, st = restart_state(name)
g.check(st.get("stage") == "masked" and st.get("head") == 1 and st.get("enlarged") is True,
        "[view] after kill -9 the restart shows the same view (stage %s, head %s, enlarged %s)" %
        (st.get("stage"), st.get("head"), st.get("enlarged")))
state = os.path.join(tmp, "view-open.json")
r = g.run(["gui", saved, "--exit-after-frames", "8", "--state-out", state] + dirs("view2") + SIZE)
st = read_or_none(state) or {}
g.check(st.get("stage") == "masked" and st.get("head") == 1 and st.get("enlarged") is True,
        "[view] opening the saved file shows its view")
# The walkthrough's options come back with it: panes, numbers, Wᵀ.
walk_file = os.path.join(tmp, "view-walk.json")
doc = g.read_json(saved)
doc["view"].update({"walkthrough": True, "walk_step": 1, "walk_pane": "all", "walk_numbers": False, "walk_weights": False})
with open(walk_file, "w") as f:
    json.dump(doc, f)
state = os.path.join(tmp, "view-walk-state.json")
r = g.run(["gui", walk_file, "--exit-after-frames", "8", "--state-out", state] + dirs("view3") + SIZE)
v = ((read_or_none(state) or {}).get("session") or {}).get("view") or {}
g.check(v.get("walk_pane") == "all" and v.get("walk_numbers") is False and v.get("walk_weights") is False
        and v.get("walkthrough") is True,
        "[view] the walkthrough's panes, numbers and Wᵀ come back from the file: %s" % v)

# Log scale follows each lesson's size: on from 64 tokens (as render), never carried over.
layout = os.path.join(tmp, "log-layout.json")
state = os.path.join(tmp, "log-state.json")
r = g.run(["gui", "gpt2-small-256", "--no-restore", "--exit-after-frames", "8", "--state-out", state] + dirs("log") + SIZE)
st = read_or_none(state) or {}
g.check(st.get("settings", {}).get("log_scale") is True, "[view] GPT-2 (256 tokens) opens on a log scale")
proc = g.start(["gui", "gpt2-small-256", "--no-restore", "--layout-out", layout, "--state-out", state] + dirs("log") + SIZE)
try:
    w = g.wait_for_layout(layout, ["menu_lessons"], proc=proc)
    g.focus_window()
    g.click(*g.center(w["menu_lessons"]))
    g.click(*g.center(g.settled_widget(layout, state, "lesson_seed003-wrapper", proc)))
    g.wait_state(state, "the six-token lesson opened", lambda j: j["session"]["tokens"] == lesson["tokens"], proc)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
g.check(st.get("session", {}).get("tokens") == lesson["tokens"] and st.get("settings", {}).get("log_scale") is False,
        "[view] switching to the six-token lesson turns the log scale off (log %s)" % st.get("settings", {}).get("log_scale"))
g.finish()
