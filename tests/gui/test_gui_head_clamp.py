"""The selected head is always one the model has: the app keeps the view's head within the
trace's heads where the trace changes (refresh in app/gui/document.cpp), so no panel or
capture sees head 2 of 2 heads.

[option]  `--head 99` on a 2-head lesson opens on head 1, the last: the state the app writes
          on exit, the session's saved view and the screenshot's sidecar (the one enlarged
          heatmap drawn) all say head 1.
[edit]    the last head selected (head 1 of 2, enlarged), num_heads typed down to 1: head 0
          is selected, saved and autosaved, and a capture (F12) draws it ("...-head0-...").

usage (under xvfb-run): test_gui_head_clamp.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
SIZE = ["--width", "1280", "--height", "800", "--check-gl"]


def dirs(name):
    return ["--config-dir", os.path.join(tmp, name, "cfg"), "--state-dir", os.path.join(tmp, name, "st"),
            "--capture-dir", os.path.join(tmp, name, "captures")]


def read_or_none(path):
    try:
        return g.read_json(path)
    except (OSError, ValueError):
        return None


def captures_in(folder):
    """The PNGs the app has saved in folder (it writes under a temporary name, then links)."""
    return sorted(f for f in os.listdir(folder) if f.endswith(".png")) if os.path.isdir(folder) else []


# [SECTION] [option] --head past the last head
name = "option"
state = os.path.join(tmp, "option-state.json")
shot = os.path.join(tmp, "option.png")
r = g.run(["gui", "seed003-wrapper", "--no-restore", "--head", "99", "--exit-after-frames", "6", "--screenshot", shot,
           "--state-out", state] + dirs(name) + SIZE)
g.check(r.returncode == 0, "[option] --head 99 runs and quits with status 0 (%d: %s)" % (r.returncode, r.stderr.strip()))
st = read_or_none(state) or {}
g.check(st.get("trace_heads") == 2 and st.get("head") == 1,
        "[option] --head 99 of 2 heads selects head 1, the last (state: head %r of %r)" % (st.get("head"), st.get("trace_heads")))
view = st.get("session", {}).get("view", {})
g.check(view.get("head") == 1 and view.get("enlarged") is True,
        "[option] the view a save writes: head 1, enlarged (%r)" % view)
side = read_or_none(shot + ".json") or {}
drawn = [h.get("head") for h in side.get("heads", [])]
g.check(drawn == [1], "[option] the screen draws one heatmap, head 1 (sidecar heads %r)" % drawn)

# [SECTION] [edit] num_heads lowered under the last head
name = "edit"
layout = os.path.join(tmp, "edit-layout.json")
state = os.path.join(tmp, "edit-state.json")
auto = os.path.join(tmp, name, "st", "autosave.json")
captures = os.path.join(tmp, name, "captures")
proc = g.start(["gui", "seed003-wrapper", "--no-restore", "--head", "1", "--layout-out", layout, "--state-out", state] +
               dirs(name) + SIZE)
try:
    w = g.wait_for_layout(layout, ["num_heads"], proc=proc)
    g.focus_window()
    # Ctrl+click makes the slider a text field; the typed count applies on Enter.
    g.xdo("keydown", "ctrl")
    g.click(*g.center(w["num_heads"]))
    g.xdo("keyup", "ctrl")
    field = g.wait_state(layout, "Ctrl+click on num_heads gives a text field", lambda j: j.get("text_input") is True,
                         proc)
    g.check(field.get("text_input") is True, "[edit] Ctrl+click on num_heads gives a text field")
    g.type_text("1")
    g.key("Return")
    a = g.wait_state(auto, "num_heads 1 autosaved", lambda a: a["model"]["num_heads"] == 1, proc)
    g.check(a is not None and a.get("model", {}).get("num_heads") == 1,
            "[edit] num_heads typed down to 1 (autosave: %r)" % (a and a.get("model")))
    g.check(a is not None and a.get("view", {}).get("head") == 0,
            "[edit] the autosaved view selects head 0, the only head (%r)" % (a and a.get("view")))
    g.click(5, 795)  # the status bar: nothing focused, so that F12 reaches the app's shortcuts
    g.key("F12")
    png = g.wait_until("a capture saved in " + captures, lambda: captures_in(captures), lambda l: len(l) > 0,
                       proc=proc)[0]
    g.check(png is not None and "-head0-" in png, "[edit] F12 captures head 0 (%r)" % png)
finally:
    rc, out, err = g.stop(proc)
g.check(rc == 0, "[edit] quits with status 0 (%d: %s)" % (rc, err.strip()[-300:]))
st = read_or_none(state) or {}
g.check(st.get("trace_heads") == 1 and st.get("head") == 0,
        "[edit] the state on exit: head %r of %r heads" % (st.get("head"), st.get("trace_heads")))
g.check(st.get("session", {}).get("view", {}).get("head") == 0,
        "[edit] the view a save writes: head 0 (%r)" % st.get("session", {}).get("view"))
g.check(st.get("gl_errors") == 0, "[edit] no GL error (%r)" % st.get("gl_errors"))

g.finish()
