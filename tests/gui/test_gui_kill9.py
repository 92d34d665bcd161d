"""No data loss after kill -9: an edit is autosaved while the app runs (a second after the
edit), the autosave file is a complete session whenever anyone reads it (atomic
replace), and after SIGKILL in the middle of further editing the next start restores the
autosaved lesson. (test_gui_sessions.py covers atomic saves, failed saves and a restore
after a clean exit, which autosaves on its own way out.)

usage (under xvfb-run): test_gui_kill9.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import os
import sys
import threading
import time

import guitest as g

tmp = g.setup(sys.argv)
state_dir = os.path.join(tmp, "st")
auto = os.path.join(state_dir, "autosave.json")
common = ["--config-dir", os.path.join(tmp, "cfg"), "--state-dir", state_dir, "--width", "1280", "--height", "800",
          "--check-gl"]
lesson = g.read_json(os.path.join(sys.argv[2], "reference", "sessions", "seed003-wrapper.json"))


def autosaved_tokens():
    try:
        return g.read_json(auto)["tokens"]
    except (OSError, ValueError, KeyError):
        return None


# [SECTION] Reader: parses the autosave file as often as it can while the app edits and
# rewrites it; a non-atomic write would be seen half-written sooner or later.
reads = {"ok": 0, "bad": []}
reading = [True]


def reader():
    while reading[0]:
        try:
            with open(auto, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            time.sleep(0.005)
            continue
        try:
            s = json.loads(data)
            assert s["format"] == "mhaviz-session" and len(s["tokens"]) == len(s["embeddings"])
            reads["ok"] += 1
        except (ValueError, KeyError, AssertionError) as e:
            reads["bad"].append("%s: %r" % (e, data[:80]))
        time.sleep(0.002)


# [1] No session argument and no --no-restore: the start a user gets.
layout = os.path.join(tmp, "layout.json")
proc = g.start(["gui", "--layout-out", layout] + common)
t = threading.Thread(target=reader, daemon=True)
t.start()
try:
    w = g.wait_for_layout(layout, ["tokens"], proc=proc)
    g.focus_window()
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    g.type_text(" zebra")
    g.click(5, 795)  # leave the field
    g.wait_until("the edit in autosave.json", autosaved_tokens, lambda t: t[-1] == "zebra", proc=proc)
    g.check((autosaved_tokens() or [None])[-1] == "zebra" and proc.poll() is None,
            "[autosave] the edit reached autosave.json while running")
    # More edits, each autosaved (a rewrite of the file) while the reader reads it.
    for word in ("gnu", "elk", "emu"):
        g.click(*g.center(w["tokens"]))
        g.key("ctrl+End")
        g.type_text(" " + word)
        g.click(5, 795)
        g.wait_until("%s in autosave.json" % word, autosaved_tokens, lambda t: t[-1] == word, proc=proc)

    # [2] Keep editing, and kill -9 right after the last key: that edit may not be saved
    # yet, but what is on disk must be a whole session that holds the earlier edit.
    g.click(*g.center(w["tokens"]))
    g.key("ctrl+End")
    g.type_text(" yak ox")
    g.check(proc.poll() is None, "[kill] the app is still running before the kill")
    proc.kill()
    proc.wait(timeout=g.WAIT_SECONDS)
    g.check(proc.returncode == -9, "[kill] the app died of SIGKILL (%s)" % proc.returncode)
finally:
    reading[0] = False
    t.join(timeout=g.WAIT_SECONDS)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=g.WAIT_SECONDS)
g.check(reads["ok"] > 0 and not reads["bad"], "[atomic] every read of autosave.json while editing was a whole session "
        "(%d reads, bad: %s)" % (reads["ok"], reads["bad"][:3]))
on_disk = autosaved_tokens()
g.check(on_disk is not None and on_disk[:len(lesson["tokens"]) + 1] == lesson["tokens"] + ["zebra"],
        "[kill] the autosave on disk after the kill holds the edit: %s" % on_disk)

# [3] The next start restores it, marked unsaved.
state = os.path.join(tmp, "state.json")
r = g.run(["gui", "--exit-after-frames", "10", "--state-out", state] + common)
g.check(r.returncode == 0, "[restore] the next start runs and exits 0 (%s)" % r.stderr.strip())
st = g.read_json(state) if os.path.exists(state) else {}
restored = st.get("session", {}).get("tokens")
g.check(restored == on_disk and restored is not None and "zebra" in restored,
        "[restore] the edited lesson is back after kill -9: %s" % restored)
g.check(st.get("modified") is True, "[restore] it is still marked as not saved to a file")
g.check("Restored" in st.get("status", ""), "[restore] the app says so: %r" % st.get("status"))
g.finish()
