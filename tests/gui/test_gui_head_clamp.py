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
import time

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


def wait_json(path, want, timeout=30.0, proc=None):
    """Polls a JSON file the app writes until want(it) holds; returns the last one read."""
    end = time.time() + timeout
    j = None
    while time.time() < end:
        j = read_or_none(path)
        if j is not None and want(j):
            return j
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.1)
    return j


def wait_capture(folder, timeout=30.0):
    """The first PNG the app saves in folder (it writes under a temporary name, then links)."""
    end = time.time() + timeout
    while time.time() < end:
        if os.path.isdir(folder):
            done = [f for f in os.listdir(folder) if f.endswith(".png")]
            if done:
                return done[0]
        time.sleep(0.1)
    return None


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
    # Ctrl+click makes the slider a text field (again, after Escape, if a loaded X server
    # lost the click); the typed count applies on Enter.
    for attempt in range(3):
        g.xdo("keydown", "ctrl")
        g.click(*g.center(w["num_heads"]))
        g.xdo("keyup", "ctrl")
        field = wait_json(layout, lambda j: j.get("text_input") is True, timeout=5.0, proc=proc)
        if field is not None and field.get("text_input") is True:
            break
        g.key("Escape")
    g.check(field is not None and field.get("text_input") is True, "[edit] Ctrl+click on num_heads gives a text field")
    g.type_text("1")
    g.key("Return")
    a = wait_json(auto, lambda a: a.get("model", {}).get("num_heads") == 1, proc=proc)
    g.check(a is not None and a.get("model", {}).get("num_heads") == 1,
            "[edit] num_heads typed down to 1 (autosave: %r)" % (a and a.get("model")))
    g.check(a is not None and a.get("view", {}).get("head") == 0,
            "[edit] the autosaved view selects head 0, the only head (%r)" % (a and a.get("view")))
    g.click(5, 795)  # the status bar: nothing focused, so that F12 reaches the app's shortcuts
    g.key("F12")
    png = wait_capture(captures)
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
