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
import subprocess
import sys
import time

import guitest as g

tmp = g.setup(sys.argv)
DATA = sys.argv[2]
lesson = g.read_json(os.path.join(DATA, "reference", "sessions", "seed003-wrapper.json"))
SIZE = ["--width", "1280", "--height", "800", "--check-gl"]


def dirs(name):
    return ["--config-dir", os.path.join(tmp, name, "cfg"), "--state-dir", os.path.join(tmp, name, "st")]


def xtype(text, delay_ms=40):
    """Characters as a typist sends them (xdotool type): each is a char event, not a held key."""
    subprocess.run(["xdotool", "type", "--delay", str(delay_ms), text], check=True, timeout=120)
    time.sleep(0.3)


def double_click_to_type(x, y, layout):
    """Double-click a value so that it takes typing. Each press and release must fall in a
    frame of its own and both clicks within ImGui's 0.3 s: on a loaded machine a frame can
    swallow one, so this tries again (after Escape) until the app says a field is active."""
    g.xdo("mousemove", x, y)
    for attempt in range(5):
        for action in ("mousedown", "mouseup", "mousedown", "mouseup"):
            subprocess.run(["xdotool", action, "1"], check=True, timeout=20)
            time.sleep(0.05 + 0.02 * attempt)
        if layout_value(layout, "text_input", lambda v: v is True, timeout=2.0):
            return True
        g.key("Escape")
    return False


def tap(key_name):
    """A short press (a few frames, well under ImGui's 0.275 s key repeat delay): one step of
    Up or Down, one Enter."""
    subprocess.run(["xdotool", "keydown", key_name], check=True, timeout=20)
    time.sleep(0.06)
    subprocess.run(["xdotool", "keyup", key_name], check=True, timeout=20)
    time.sleep(0.25)


def key_until(combo, path, key, want):
    """A key, then the layout's key until want holds; once more if a loaded X server lost the
    key (each press is checked: an undo applied twice would show as the wrong label)."""
    for _ in range(2):
        g.key(combo)
        v = layout_value(path, key, want, timeout=4.0)
        if want(v):
            return v
    return v


def layout_value(path, key, want, timeout=10.0):
    """Polls the layout file until key's value satisfies want; returns the last value."""
    end = time.time() + timeout
    v = None
    while time.time() < end:
        try:
            v = g.read_json(path).get(key)
            if want(v):
                return v
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    return v


def read_or_none(path):
    try:
        return g.read_json(path)
    except (OSError, ValueError):
        return None


def wait_autosave(auto, want, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        a = read_or_none(auto)
        if a is not None and want(a):
            return a
        time.sleep(0.1)
    return read_or_none(auto)


def kill9(proc):
    """SIGKILL, as a crash or a power cut would end the app; True when that is how it ended."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
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
saved = os.path.join(tmp, "saved.json")
proc = g.start(["gui", "--layout-out", layout] + dirs(name) + SIZE)
try:
    w = g.wait_for_layout(layout, ["tokens", "embedding0_0"], proc=proc)
    g.focus_window()
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" zebra")
    g.click(5, 795)  # leave the field
    a = wait_autosave(auto, lambda a: a["tokens"][-1] == "zebra")
    g.check(a is not None and a["tokens"][-1] == "zebra", "[loss] a valid edit (zebra) is autosaved")

    # Double-click the x0 cell of "Your", type 1e9, Enter.
    g.check(double_click_to_type(*g.center(w["embedding0_0"]), layout), "[loss] a double-click on x0 of Your takes typing")
    xtype("1e9")
    g.key("Return")
    refusal = layout_value(layout, "refusal", lambda v: v and "embeddings[0][0]" in v)
    g.check(refusal is not None and "embeddings[0][0]: 1e+09 is not a finite number within ±1e6" in refusal,
            "[loss] 1e9 in a cell is refused with the format's message where it was typed: %r" % refusal)
    w = g.wait_for_layout(layout, ["refusal"], proc=proc)
    g.check(w["refusal"][1] < w["embedding0_0"][1],
            "[loss] the reason is shown at the table (above its rows, y %d < %d)" % (w["refusal"][1], w["embedding0_0"][1]))

    # Ctrl+S: a lesson has no file yet, so Save As asks for one; the save succeeds.
    g.key("ctrl+s")
    w = g.wait_for_layout(layout, ["dialog_path"], proc=proc)
    xtype(saved, 10)
    g.key("Return")
    end = time.time() + 10
    while time.time() < end and not os.path.exists(saved):
        time.sleep(0.1)
    s = read_or_none(saved)
    g.check(s is not None and s["embeddings"][0][0] == lesson["embeddings"][0][0] and s["tokens"][-1] == "zebra",
            "[loss] Ctrl+S then saves, with the refused value not in it: %s" % (s and s["embeddings"][0]))

    # More valid typing, autosaved; then a 300-character token: refused at the field.
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" yak")
    g.click(5, 795)
    a = wait_autosave(auto, lambda a: a["tokens"][-1] == "yak")
    g.check(a is not None and a["tokens"][-1] == "yak", "[loss] the next valid edit (yak) is autosaved")
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" " + "q" * 300, 4)
    refusal = layout_value(layout, "refusal", lambda v: v and "300 bytes" in v)
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
    time.sleep(0.4)
    w = g.wait_for_layout(layout, ["recover_open", "recover_dismiss"], proc=proc)
    g.click(*g.center(w["recover_open"]))
    time.sleep(0.5)
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
    time.sleep(0.4)
    g.key("Escape")
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" kept")
    g.click(5, 795)
    a = wait_autosave(os.path.join(st_dir, "autosave.json"), lambda a: a["tokens"][-1] == "kept")
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
proc = g.start(["gui", "--layout-out", layout] + dirs(name) + SIZE)
try:
    w = g.wait_for_layout(layout, ["d_out", "tokens", "menu_lessons", "menu_edit"], proc=proc)
    g.focus_window()
    menu = layout_value(layout, "edit_menu", lambda v: v is not None)
    g.check(menu == "Undo|Redo", "[undo] nothing to undo at the start: %r" % menu)
    x0, y0, x1, y1 = w["d_out"]
    cy = int((y0 + y1) / 2)
    g.drag(int(x0 + (x1 - x0) * 0.1), cy, int(x0 + (x1 - x0) * 0.5), cy, steps=10)  # many values, one drag
    menu = layout_value(layout, "edit_menu", lambda v: v and v.startswith("Undo change d_out"))
    g.check(menu == "Undo change d_out|Redo", "[undo] the Edit menu names the drag: %r" % menu)
    menu = key_until("ctrl+z", layout, "edit_menu", lambda v: v and "Redo change d_out" in v)
    g.check(menu == "Undo|Redo change d_out", "[undo] one Ctrl+Z took back the whole drag: %r" % menu)
    menu = key_until("ctrl+shift+z", layout, "edit_menu", lambda v: v and v.startswith("Undo change d_out"))
    g.check(menu == "Undo change d_out|Redo", "[undo] Ctrl+Shift+Z redid it: %r" % menu)
    key_until("ctrl+z", layout, "edit_menu", lambda v: v and "Redo change d_out" in v)
    menu = key_until("ctrl+y", layout, "edit_menu", lambda v: v and v.startswith("Undo change d_out"))
    g.check(menu == "Undo change d_out|Redo", "[undo] Ctrl+Z then Ctrl+Y: redone again: %r" % menu)

    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    xtype(" zebra ox")
    g.click(5, 795)
    menu = layout_value(layout, "edit_menu", lambda v: v and v.startswith("Undo edit tokens"))
    g.check(menu == "Undo edit tokens|Redo", "[undo] typing in the field is one step: %r" % menu)

    # A lesson switch (asks first: the lesson has unsaved changes), then undo it.
    g.click(*g.center(w["menu_lessons"]))
    w = g.wait_for_layout(layout, ["lesson_book-weight-split-3d"], proc=proc)
    g.click(*g.center(w["lesson_book-weight-split-3d"]))
    g.wait_for_layout(layout, ["open_discard"], proc=proc)
    time.sleep(0.4)  # a popup sizes itself over its first frames: click where it settled
    w = g.wait_for_layout(layout, ["open_discard"], proc=proc)
    g.click(*g.center(w["open_discard"]))
    menu = layout_value(layout, "edit_menu", lambda v: v and v.startswith("Undo open lesson book"))
    g.check(menu == "Undo open lesson book-weight-split-3d|Redo", "[undo] the lesson switch is a step: %r" % menu)
    key_until("ctrl+z", layout, "edit_menu", lambda v: v and v.startswith("Undo edit tokens"))  # the edited lesson
    menu = key_until("ctrl+z", layout, "edit_menu", lambda v: v and v.startswith("Undo change d_out"))  # before the typing
    g.check(menu == "Undo change d_out|Redo edit tokens", "[undo] two undos: before the typing: %r" % menu)
    a = wait_autosave(auto, lambda a: a["tokens"] == lesson["tokens"] and a["model"]["d_out"] != 2)
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
    xtype("we cut the cake", 60)  # w, e, c, space and 1-5 are shortcuts when alone
    time.sleep(0.8)
    g.click(5, 795)
    time.sleep(0.5)
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
    time.sleep(0.6)
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
    pos = layout_value(layout, "walk", lambda v: v and 2.05 < v["pos"] < 2.9, timeout=6)
    g.key("space")
    time.sleep(2.5)
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
    a = wait_autosave(os.path.join(tmp, name, "st", "autosave.json"), lambda a: a["model"]["d_out"] != 2)
    g.check(a is not None and 1 <= a["model"]["d_out"] <= 8,
            "[sliders] a small drag moves d_out by a few sizes, not hundreds: %s" % (a and a["model"]["d_out"]))

    def ctrl_click_type(rect, text):
        g.xdo("keydown", "ctrl")
        g.click(*g.center(rect))
        g.xdo("keyup", "ctrl")
        time.sleep(0.3)
        xtype(text)
        g.key("Return")
        time.sleep(0.4)

    ctrl_click_type(w["d_out"], "8192")
    ctrl_click_type(w["d_out"], "9000")
    refusal = layout_value(layout, "refusal", lambda v: v and "9000" in v)
    g.check(refusal == "model.d_out: 9000 is out of range [1, 8192] (not applied)",
            "[sliders] d_out typed past the documented limit is refused, naming it: %r" % refusal)
    w = g.wait_for_layout(layout, ["num_heads"], proc=proc)
    ctrl_click_type(w["num_heads"], "4")  # wrapper: 4 heads of 8192 would be 32768 features
    refusal = layout_value(layout, "refusal", lambda v: v and "num_heads" in v)
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
    cells = layout_value(layout, "token_cells", lambda v: v and len(v) == 4)
    g.check(cells is not None and cells[3].endswith("\u2026") and "extraordinarily".startswith(cells[3][:-1]) and
            len(cells[3]) < 15, "[table] a long token is elided in the table: %s" % cells)
    w = g.wait_for_layout(layout, ["embedding_table", "embedding0_last"], proc=proc)
    table_x1 = w["embedding_table"][2]
    g.check(w["embedding0_last"][2] > table_x1, "[table] with d_in 6 the last column starts out of sight (%d > %d)" %
            (w["embedding0_last"][2], table_x1))
    g.xdo("mousemove", int((w["embedding_table"][0] + table_x1) / 2), int(w["embedding_table"][1] + 40))
    for _ in range(12):
        g.xdo("click", 7)  # scroll right
    end = time.time() + 5
    while time.time() < end:
        w = g.wait_for_layout(layout, ["embedding0_last"], proc=proc)
        if w["embedding0_last"][2] <= table_x1:
            break
        time.sleep(0.1)
    g.check(w["embedding0_last"][2] <= table_x1, "[table] scrolling sideways brings x5 into the table (%d <= %d)" %
            (w["embedding0_last"][2], table_x1))
    g.check(double_click_to_type(*g.center(w["embedding0_last"]), layout), "[table] x5 takes typing")
    xtype("0.5")
    g.key("Return")
    # The panel's edge: drag it 200 pixels to the right.
    before = w["tokens"][2] - w["tokens"][0]
    x0, y0, x1, y1 = w["left_edge"]
    g.drag(int((x0 + x1) / 2), int((y0 + y1) / 2), int((x0 + x1) / 2) + 200, int((y0 + y1) / 2), steps=6)
    time.sleep(0.5)
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
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
    g.wait_for_layout(layout, ["dialog_path"], proc=proc)
    time.sleep(0.3)
    g.key("ctrl+a")
    xtype(folder, 10)  # a folder typed, Enter: the dialog shows it
    tap("Return")
    rows = layout_value(layout, "browse_rows", lambda v: v and "a.json" in v)
    g.check(rows == ["..", "sub/", "a.json"], "[files] the folder's subfolders and .json files, not the rest: %s" % rows)
    g.check(layout_value(layout, "text_input", lambda v: v is True) is True, "[files] the path field has the keyboard again")
    time.sleep(0.3)
    for _ in range(3):
        tap("Down")  # .., sub/, a.json
    tap("Return")
    time.sleep(0.5)
    g.key("ctrl+shift+s")  # Save As starts in the folder of the file
    g.wait_for_layout(layout, ["dialog_path"], proc=proc)
    time.sleep(0.3)
    g.key("ctrl+a")
    xtype("b.json", 20)
    tap("Return")
    end = time.time() + 10
    while time.time() < end and not os.path.exists(os.path.join(folder, "b.json")):
        time.sleep(0.1)
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
proc = g.start(["gui", "seed003-wrapper", "--no-restore", "--layout-out", layout] + dirs(name) + SIZE)
try:
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
    g.focus_window()
    g.click(5, 795)
    g.key("2")  # masked
    g.key("bracketright")  # head 1
    g.key("e")  # enlarged
    a = wait_autosave(auto, lambda a: a.get("view", {}).get("enlarged") is True)
    g.check(a is not None and a["version"] == 2 and a["view"]["stage"] == "masked" and a["view"]["head"] == 1,
            "[view] a change of view alone is autosaved, as version 2: %s" % (a and a.get("view")))
    g.key("ctrl+s")
    g.wait_for_layout(layout, ["dialog_path"], proc=proc)
    xtype(saved, 10)
    g.key("Return")
    end = time.time() + 10
    while time.time() < end and not os.path.exists(saved):
        time.sleep(0.1)
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
    w = g.wait_for_layout(layout, ["lesson_seed003-wrapper"], proc=proc)
    time.sleep(0.3)
    g.click(*g.center(w["lesson_seed003-wrapper"]))
    time.sleep(0.8)
finally:
    rc, out, err = g.stop(proc)
st = read_or_none(state) or {}
g.check(st.get("session", {}).get("tokens") == lesson["tokens"] and st.get("settings", {}).get("log_scale") is False,
        "[view] switching to the six-token lesson turns the log scale off (log %s)" % st.get("settings", {}).get("log_scale"))
g.finish()
