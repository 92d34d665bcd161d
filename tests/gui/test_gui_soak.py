"""Soak: random xdotool input for a bounded time (MHAVIZ_SOAK_SECONDS, default 60) from a
printed seed (MHAVIZ_SOAK_SEED): clicks and drags on every control and on random points,
typing into the token field (empty, unicode, very long), stage/head/walkthrough keys,
variant and lesson switches, font size changes, window resizes down to 1x1 and
unmap/minimise/restore. The app must stay alive, never abort (ImGui assert), never report
a GL error (--check-gl exits 3 on the first one), keep its memory bounded, and quit
cleanly with status 0 at the end.

usage (under xvfb-run): test_gui_soak.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import os
import random
import subprocess
import sys
import threading
import time

import guitest as g

tmp = g.setup(sys.argv)
DURATION = float(os.environ.get("MHAVIZ_SOAK_SECONDS", "60"))
# MHAVIZ_SOAK_SEED (by hand) over MHAVIZ_SOAK_DEFAULT_SEED (CTest's fixed one, so CI reruns
# exactly) over the clock (the script run alone); printed either way.
SEED = int(os.environ.get("MHAVIZ_SOAK_SEED") or os.environ.get("MHAVIZ_SOAK_DEFAULT_SEED") or str(int(time.time()) % 100000))
print("soak: seed %d (rerun with MHAVIZ_SOAK_SEED=%d), %.0f s" % (SEED, SEED, DURATION), flush=True)
rng = random.Random(SEED)
W, H = 1280, 800
LESSONS = ["seed003-wrapper", "seed003-weight-split-6d", "book-weight-split-3d", "journey-dropout-half",
           "seed002-fused-qkv-encoder", "transformer-base-64", "gpt2-small-256", "gpt2-xl-128"]
SLIDERS = ["d_in", "d_out", "num_heads", "dropout"]

layout = os.path.join(tmp, "layout.json")
state = os.path.join(tmp, "state.json")
proc = g.start(["gui", "seed003-wrapper", "--no-restore", "--check-gl", "--width", str(W), "--height", str(H),
                "--config-dir", os.path.join(tmp, "cfg"), "--state-dir", os.path.join(tmp, "st"),
                "--capture-dir", os.path.join(tmp, "captures"), "--layout-out", layout, "--state-out", state])


# [SECTION] Memory sampler: VmRSS every 0.5 s, and VmHWM (peak), from /proc.
samples = []  # (seconds since start, VmRSS KiB)
peak_kib = [0]
sampling = [True]


CONFIRM_QUIT = 3  # app_state.hpp: Dialog::ConfirmQuit in the state's "dialog"


def proc_status(field):
    try:
        with open("/proc/%d/status" % proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def sampler():
    t0 = time.time()
    while sampling[0] and proc.poll() is None:
        rss, hwm = proc_status("VmRSS"), proc_status("VmHWM")
        if rss is not None:
            samples.append((time.time() - t0, rss))
        if hwm is not None:
            peak_kib[0] = max(peak_kib[0], hwm)
        time.sleep(0.5)


# [SECTION] Input helpers. Every xdotool call may legitimately fail while the window is
# unmapped or tiny (BadMatch, pointer outside): such failures are not the app's. PACE is the
# soak's rate of input (a fast user), not a wait for the app: the app queues what it has not
# drawn yet, and a slow machine only draws fewer frames of it.
PACE = 0.15
# Input events the app may have queued, not yet drawn, before the soak waits for it.
BEHIND = 40
waits = [0]  # how often the soak waited for the app


def xdo(*args):
    g.xdo(*args, check=False)
    time.sleep(PACE)


def click_at(x, y):
    g.click(x, y, check=False)
    time.sleep(PACE)


def hold(combo):
    g.key(combo, check=False)
    time.sleep(PACE)


def drag(x0, y0, x1, y1, steps):
    g.drag(x0, y0, x1, y1, steps=steps, check=False)
    time.sleep(PACE)


def widgets():
    try:
        return g.read_json(layout)["widgets"]
    except (OSError, ValueError, KeyError):
        return {}


def alive():
    return proc.poll() is None


def rand_point_in(rect):
    x0, y0, x1, y1 = rect[:4]
    return int(rng.uniform(x0 + 1, max(x0 + 2, x1 - 1))), int(rng.uniform(y0 + 1, max(y0 + 2, y1 - 1)))


def focus_token_field():
    w = widgets()
    if "tokens" not in w:
        return False
    click_at(*g.center(w["tokens"]))
    return True


LONG = " ".join("tok%d" % i for i in range(40)) + " " + "x" * 300  # many tokens, then one over 256 bytes
TEXTS = ["", "hello", " é 中文 😀", "naïve café 東京 🙂🙃", LONG, "a  b\tc", "   ", "Your journey starts"]

events = {}


def count(kind):
    events[kind] = events.get(kind, 0) + 1


# [SECTION] Actions
def act_click_widget():
    w = widgets()
    names = [n for n in w if len(w[n]) == 4]
    if names:
        click_at(*rand_point_in(w[rng.choice(names)]))


def act_drag_slider():
    w = widgets()
    names = [n for n in SLIDERS + ["walk_scrub", "embedding0_0"] if n in w]
    if not names:
        return
    name = rng.choice(names)
    x0, y0, x1, y1 = w[name]
    cy = int((y0 + y1) / 2)
    # d_in and d_out are logarithmic 1..2048: keep the drags in the lower 60% (up to ~100)
    # so that memory depends on the lessons, not on where a drag ended.
    hi = 0.6 if name in ("d_in", "d_out") else 1.0
    xa = int(x0 + (x1 - x0) * rng.uniform(0.0, hi))
    xb = int(x0 + (x1 - x0) * rng.uniform(0.0, hi))
    if name == "embedding0_0":
        xa, xb = int((x0 + x1) / 2), int((x0 + x1) / 2) + rng.randint(-80, 80)
    drag(xa, cy, xb, cy, 4)


def act_click_random_point():
    # Below the menu bar: a click there could pick File > Quit, which is no crash.
    click_at(rng.randint(0, W - 1), rng.randint(30, H - 1))


def act_drag_random():
    drag(rng.randint(0, W - 1), rng.randint(30, H - 1), rng.randint(0, W - 1), rng.randint(30, H - 1), 2)


def act_type():
    if not focus_token_field():
        return
    text = rng.choice(TEXTS)
    if rng.random() < 0.5:
        # Replace everything: select all, delete (an empty field), then type.
        hold("ctrl+a")
        hold("Delete")
    else:
        hold("ctrl+End")
    if text:
        # Characters are queued by ImGui, so they are not dropped like key presses.
        subprocess.run(g.XDOTOOL + ["type", "--delay", "8", text], capture_output=True, timeout=60)
    time.sleep(0.2)
    click_at(5, H - 5)  # leave the field (the status bar)


def act_key():
    hold(rng.choice(["1", "2", "3", "4", "5", "bracketleft", "bracketright", "Left", "Right", "space", "e", "w",
                     "Escape", "Up", "Down", "Tab"]))


def act_undo():
    """Undo or redo, several times, by key or through the Edit menu (the autosave follows)."""
    for _ in range(rng.randint(1, 4)):
        k = rng.random()
        if k < 0.15:
            w = widgets()
            if "menu_edit" in w:
                click_at(*g.center(w["menu_edit"]))
                time.sleep(0.2)
                item = rng.choice(["edit_undo", "edit_redo"])
                w = widgets()
                if item in w:
                    click_at(*g.center(w[item]))
                hold("Escape")
        else:
            hold("ctrl+z" if k < 0.6 else rng.choice(["ctrl+shift+z", "ctrl+y"]))


def act_type_unfocused():
    """A sentence typed with no field active: it goes to the tokens field, no shortcut fires."""
    click_at(5, H - 5)  # nothing focused (the status bar)
    text = rng.choice(["we cut the cake", "1 2 3 e c w", "[ ] e", "hello world", "né 東京"])
    subprocess.run(g.XDOTOOL + ["type", "--delay", str(rng.choice([20, 60, 120])), text], capture_output=True, timeout=60)
    time.sleep(0.4)
    click_at(5, H - 5)


def act_font():
    hold(rng.choice(["ctrl+equal", "ctrl+minus"]))


def act_variant():
    w = widgets()
    if "variant" not in w:
        return
    x0, y0, x1, y1 = w["variant"]
    click_at(int((x0 + x1) / 2), int((y0 + y1) / 2))
    row = y1 - y0
    k = rng.randint(0, 2)
    click_at(int((x0 + x1) / 2), int(y1 + row * (0.5 + k) * 0.9 + 4))


def act_lesson():
    """A lesson from the menu, at the soak's pace: a menu the app has not drawn yet when the
    soak looks for its item is left (random input; the tour below waits for each lesson)."""
    w = widgets()
    if "menu_lessons" not in w:
        return
    click_at(*g.center(w["menu_lessons"]))
    time.sleep(0.2)
    name = rng.choice(LESSONS)
    w = widgets()
    key = "lesson_" + name
    if key in w:
        click_at(*g.center(w[key]))
        time.sleep(0.3)
        w = widgets()
        if "open_discard" in w:
            click_at(*g.center(w["open_discard"]))
    hold("Escape")


def tour_lesson(name, menu):
    """Opens a lesson and waits until it is computed: the tour's memory is every lesson's.
    menu: the Lessons menu's rectangle while closed (while open the hook records the popup's)."""
    click_at(*g.center(menu))
    click_at(*g.center(g.settled_widget(layout, state, "lesson_" + name, proc)))
    st = g.wait_state(state, "lesson %s opened, or the question first" % name,
                      lambda j: j["origin"] == "lesson " + name or j["dialog"] != 0, proc)
    if st["origin"] != "lesson " + name:
        click_at(*g.center(g.settled_widget(layout, state, "open_discard", proc)))
    g.wait_state(state, "lesson %s computed" % name, lambda j: j["origin"] == "lesson " + name and j["have_trace"] and
                 j["trace_tokens"] == len(j["session"]["tokens"]), proc)


def act_resize(wid):
    kind = rng.choice(["tiny", "small", "odd", "minimise", "unmap", "big"])
    if kind == "tiny":
        xdo("windowsize", wid, 1, 1)
    elif kind == "small":
        xdo("windowsize", wid, rng.randint(2, 200), rng.randint(2, 150))
    elif kind == "odd":
        xdo("windowsize", wid, rng.randint(200, W), rng.randint(100, H))
    elif kind == "minimise":
        xdo("windowminimize", wid)
    elif kind == "unmap":
        xdo("windowunmap", wid)
    else:
        xdo("windowsize", wid, W + 200, H + 100)
    time.sleep(rng.uniform(0.2, 1.0))  # several frames (or waits) at that size
    xdo("windowmap", wid)
    xdo("windowsize", wid, W, H)
    xdo("windowmove", wid, 0, 0)
    xdo("windowfocus", wid)
    time.sleep(0.3)


ACTIONS = [(act_click_widget, 16, "click widget"), (act_drag_slider, 12, "drag slider"),
           (act_click_random_point, 10, "click point"), (act_drag_random, 5, "drag point"), (act_type, 10, "type"),
           (act_key, 16, "key"), (act_font, 2, "font size"), (act_variant, 5, "variant"), (act_lesson, 5, "lesson"),
           (act_undo, 8, "undo/redo"), (act_type_unfocused, 5, "type unfocused"), (None, 4, "resize")]

threading.Thread(target=sampler, daemon=True).start()
clean_exit = False
soak_s = 0.0
try:
    menu = g.wait_for_layout(layout, ["tokens", "menu_lessons", "variant"], proc=proc)["menu_lessons"]
    wid = g.focus_window()
    xdo("windowmove", wid, 0, 0)
    # A tour of every lesson first: the heaviest the soak can reach is in the baseline,
    # so later memory can be compared with it.
    for name in LESSONS:
        tour_lesson(name, menu)
        count("lesson")
    tour_end = len(samples)
    tour_lesson("seed003-wrapper", menu)
    start = time.time()
    while time.time() - start < DURATION and alive():
        fn, _, kind = rng.choices(ACTIONS, weights=[a[1] for a in ACTIONS])[0]
        if fn is None:
            act_resize(wid)
        else:
            fn()
        count(kind)
        # A user waits for an app that lags: where frames are slow (one starved core) the
        # queue of input not yet drawn grows past what the quit below could wait for.
        try:
            behind = g.read_json(state)["input"]["pending"] > BEHIND
        except (OSError, ValueError, KeyError):
            behind = False
        if behind and alive():
            g.catch_up(state, proc, most=BEHIND // 4)
            waits[0] += 1
    soak_s = time.time() - start
    g.check(alive(), "the app stayed alive for the whole soak (exit status %s)" % proc.poll())

    # Clean quit: close whatever is open, Ctrl+Q, answer the unsaved-changes question (as
    # often as it is still asked: after the soak's resizes the question may move once more
    # after the pointer got there), until the app has exited.
    if alive():
        g.catch_up(state, proc)
        hold("Escape")
        click_at(5, H - 5)
        hold("Escape")
        hold("ctrl+q")

        def answer():
            # The question is open in the state of a frame drawn now (the layout is rewritten
            # only when it changes, so alone it may still show a question already answered).
            if alive() and g.read_json(state)["dialog"] == CONFIRM_QUIT:
                rect = g.settled_widget(layout, state, "quit_discard", proc, exit_ok=True)
                if rect is None:
                    return proc.poll()  # quitting already: what this wait is for
                sent = time.time()
                click_at(*g.center(rect))
                # The answer acts: the app exits (the wait's success), or takes the click and
                # draws on (the question moved under the pointer: the next pass answers again).
                g.wait_until("the app exits or takes the click", lambda: (proc.poll(), g.read_json(state)),
                             lambda v: v[0] is not None or (v[1]["input"]["polled_at"] > sent and
                                                            v[1]["input"]["pending"] == 0),
                             exit_ok=True, proc=proc)
            return proc.poll()

        try:
            g.wait_until("the app quits (answering its question)", answer, lambda rc: rc is not None, interval=0.2)
            clean_exit = True
        except g.WaitTimeout:
            pass
finally:
    sampling[0] = False
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=g.WAIT_SECONDS)
    out, err = g.output(proc)

rc = proc.returncode
print("soak: %.0f s, %d events %s, waited for the app %d times, peak RSS (VmHWM) %.1f MiB, %d RSS samples" %
      (soak_s, sum(events.values()), events, waits[0], peak_kib[0] / 1024.0, len(samples)), flush=True)
g.check(clean_exit and rc == 0, "the app quit cleanly with status 0 (status %s; stderr: %s)" %
        (rc, err.strip()[-2000:]))
g.check("Assertion" not in err and "OpenGL error" not in err, "no assertion and no GL error on stderr")
g.check(os.path.exists(state) and g.read_json(state)["gl_errors"] == 0, "the state dump reports no GL errors")

# [SECTION] Memory: the last third of the soak must not exceed the first third (which
# follows the tour of every lesson) by more than half plus 64 MiB: an unbounded leak
# grows past any such bound given time, a working set does not.
soak = [kib for i, (_, kib) in enumerate(samples) if i >= tour_end]
if len(soak) >= 9:
    third = len(soak) // 3
    first = max(max(kib for _, kib in samples[:tour_end] or [(0, 0)]), max(soak[:third]))
    last = max(soak[-third:])
    print("soak: RSS max in the tour + first third %.1f MiB, in the last third %.1f MiB" %
          (first / 1024.0, last / 1024.0))
    g.check(last <= first * 1.5 + 64 * 1024, "memory stays bounded (%.1f -> %.1f MiB)" % (first / 1024.0, last / 1024.0))
else:
    g.check(False, "enough RSS samples to judge memory (%d)" % len(soak))
g.finish()
