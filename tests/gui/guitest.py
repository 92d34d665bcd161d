"""Helpers for the GUI tests: run the real `mhaviz` under the X server the test runs in
(xvfb-run starts it), drive it with xdotool, wait for the state it writes (--state-out,
--layout-out) to say what a check needs, read PNG captures. Python stdlib only."""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

MHAVIZ = None
FAILURES = []
TEMP_DIRS = []  # removed when every check passed (kept on failure, or with MHAVIZ_KEEP_TEST_FILES)
# Deadline of every wait for the app: generous, because a sanitizer build on two shared cores
# drawing with llvmpipe is 5-10 times slower than the dev build; a wait ends as soon as its
# condition holds, so a fast machine never waits for it.
WAIT_SECONDS = float(os.environ.get("MHAVIZ_GUI_WAIT_SECONDS", "120"))


def setup(argv):
    global MHAVIZ
    if len(argv) < 2:
        sys.exit("usage: %s PATH/TO/mhaviz [data dir]" % argv[0])
    MHAVIZ = argv[1]
    if not os.environ.get("DISPLAY"):
        sys.exit("these tests run under xvfb-run (no DISPLAY)")
    return track(tempfile.mkdtemp(prefix="mhaviz-gui-test-"))


def track(path):
    TEMP_DIRS.append(path)
    return path


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        FAILURES.append(what)
    return cond


def finish():
    if FAILURES:
        print("%d check(s) failed:" % len(FAILURES))
        for f in FAILURES:
            print("  - " + f)
        print("test files kept in: " + " ".join(TEMP_DIRS))
        sys.exit(1)
    print("all checks passed")
    if not os.environ.get("MHAVIZ_KEEP_TEST_FILES"):
        for d in TEMP_DIRS:
            shutil.rmtree(d, ignore_errors=True)


# A kernel record calibrated once for the suite (CTest's kernel_record fixture): copied into a
# fresh --config-dir, it spares each launch that runs a model its own calibration (4-6 s under
# ASan). Unset (a script run by hand, or one judging speed), launches calibrate as a user's does.
KERNELS_JSON = os.environ.get("MHAVIZ_KERNELS_JSON")


def _option(args, flag):
    """The value after flag in args, or None."""
    return args[args.index(flag) + 1] if flag in args else None


def _seed_kernels(args):
    folder = _option(args, "--config-dir")
    if not KERNELS_JSON or not os.path.isfile(KERNELS_JSON) or folder is None:
        return
    if os.path.lexists(folder) and not os.path.isdir(folder):
        return  # a test of a settings path that is not a folder
    os.makedirs(folder, exist_ok=True)
    if not os.path.lexists(os.path.join(folder, "kernels.json")):
        shutil.copyfile(KERNELS_JSON, os.path.join(folder, "kernels.json"))


def run(args, timeout=600, **kw):
    """Runs mhaviz to completion; returns CompletedProcess. The timeout is the app's bound on a
    made-slow machine (a sanitizer build on two busy cores), not a figure it should meet."""
    _seed_kernels(args)
    return subprocess.run([MHAVIZ] + args, capture_output=True, text=True, timeout=timeout, **kw)


def model_dump(model, text, extra=()):
    """`mhaviz dump --model MODEL --text TEXT [EXTRA]` as JSON (token_ids, tokens, every layer's
    attention weights); it must succeed."""
    r = run(["dump", "--model", model, "--text", text, *extra])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# [SECTION] The app as a process. Its output goes to files, so that a wait that fails can
# show the stderr of an app that still runs.
APPS = []  # (proc, stdout path, stderr path) of every app started


def start(args):
    """Starts the app, after removing what an earlier run wrote to the files it is told to
    write: a wait must never read an earlier run's state."""
    for path in filter(None, (_option(args, f) for f in ("--layout-out", "--state-out", "--screenshot"))):
        for f in (path, path + ".json"):
            if os.path.exists(f):
                os.remove(f)
    _seed_kernels(args)
    logs = tempfile.mkdtemp(prefix="mhaviz-gui-app-")
    track(logs)
    out, err = os.path.join(logs, "stdout"), os.path.join(logs, "stderr")
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen([MHAVIZ] + args, stdout=fo, stderr=fe, text=True)
    APPS.append((proc, out, err))
    return proc


def output(proc):
    """(stdout, stderr) the app wrote so far."""
    for p, out, err in APPS:
        if p is proc:
            with open(out, errors="replace") as fo, open(err, errors="replace") as fe:
                return fo.read(), fe.read()
    return "", ""


def stop(proc, timeout=WAIT_SECONDS):
    """Asks the app to quit (SIGTERM: state written, nothing asked), waits; (status, stdout, stderr)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=timeout)
    out, err = output(proc)
    return proc.returncode, out, err


# [SECTION] Waits: a condition polled until a generous deadline, never a fixed sleep
class WaitTimeout(AssertionError):
    pass


def _app_report(proc):
    procs = [proc] if proc is not None else [p for p, _, _ in APPS[-1:]]
    lines = []
    for p in procs:
        status = p.poll()
        err = output(p)[1].strip()
        lines.append("  the app %s; stderr tail:\n    %s" % (
            "runs (pid %d)" % p.pid if status is None else "exited with status %s" % status,
            "\n    ".join(err.splitlines()[-15:]) or "(empty)"))
    return "\n".join(lines)


def wait_until(what, read, predicate, timeout=None, proc=None, interval=0.05, exit_ok=False):
    """Polls read() until predicate(its value) holds and returns that value. read() raising
    OSError or ValueError (a file not written yet) reads as None; predicate raising KeyError,
    TypeError or IndexError is false. When the deadline passes, or proc exits without the
    condition holding, prints what did not hold, the last value seen and the app's exit status
    and stderr, and raises WaitTimeout; with exit_ok, proc exiting returns None instead (a
    wait the app's exit also ends, as while it quits)."""
    deadline = time.time() + (WAIT_SECONDS if timeout is None else timeout)
    t0 = time.time()
    value = None
    while True:
        exited = proc is not None and proc.poll() is not None
        try:
            value = read()
        except (OSError, ValueError):
            value = None
        try:
            if predicate(value):
                return value
        except (KeyError, TypeError, IndexError, AttributeError):
            pass
        if exited and exit_ok:
            return None
        if exited or time.time() > deadline:
            break
        time.sleep(interval)
    seen = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    if len(seen) > 2000:
        seen = seen[:2000] + " ..."
    msg = "waited %.1f s for: %s%s" % (time.time() - t0, what, " (the app exited first)" if exited else "")
    print("FAIL " + msg)
    print("  last seen: " + seen)
    print(_app_report(proc))
    FAILURES.append(msg)
    print("test files kept in: " + " ".join(TEMP_DIRS))
    raise WaitTimeout(msg)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def wait_state(path, what, predicate, proc=None, timeout=None, exit_ok=False):
    """Waits until the JSON file at path (--state-out, --layout-out) satisfies predicate; returns
    it (None when proc exited first and exit_ok)."""
    return wait_until("%s (%s)" % (what, os.path.basename(path)), lambda: read_json(path), predicate, timeout, proc,
                      exit_ok=exit_ok)


def wait_for_file(path, proc=None, timeout=None):
    """Waits until path exists and is not empty (files the app writes are renamed into place whole)."""
    wait_until("file %s" % path, lambda: os.path.getsize(path), lambda n: n > 0, timeout, proc)
    return True


def wait_for_layout(path, names, proc=None, timeout=None):
    """Waits until the layout file lists every widget in names (drawn now or before); returns
    the widgets."""
    return wait_state(path, "widgets %s drawn" % names, lambda j: all(n in j["widgets"] for n in names), proc,
                      timeout)["widgets"]


def wait_dialog_field(state, proc=None):
    """Waits until a dialog is open and its path field has the keyboard (a frame after it opens)."""
    return wait_state(state, "a dialog whose path field has the keyboard", lambda j: j["dialog"] != 0 and j["text_input"],
                      proc)


def settled_widget(layout, state, name, proc=None, exit_ok=False):
    """The rectangle of a widget drawn in the latest frame (the layout's "widgets" keep where
    each was last drawn: a closed menu's items too) that may still move, as a popup sizing
    itself over its first frames: read again after a few frames until two readings agree.
    With exit_ok, None when proc exits meanwhile."""
    def drawn():
        j = wait_state(layout, "%s drawn" % name, lambda j: name in j["shown"], proc, exit_ok=exit_ok)
        return None if j is None else j["widgets"][name]

    seen = [drawn()]

    def again():
        if wait_frames(state, 2, proc, exit_ok) is None:
            return None
        seen.append(drawn())
        return seen

    if seen[0] is None:
        return None
    r = wait_until("%s to stay in place for two frames" % name, again, lambda r: r[-1] == r[-2], proc=proc,
                   exit_ok=exit_ok)
    return None if r is None or r[-1] is None else r[-1]


def wait_frames(path, n, proc=None, exit_ok=False):
    """Waits until the app has drawn n more frames than its state file says now; returns the
    state (None when proc exited first and exit_ok)."""
    j = wait_state(path, "a state with a frame number", lambda j: j["frames"] >= 0, proc, exit_ok=exit_ok)
    if j is None:
        return None
    first = j["frames"]
    return wait_state(path, "%d frames after frame %d" % (n, first), lambda j: j["frames"] >= first + n, proc,
                      exit_ok=exit_ok)


def settle(path, proc=None):
    """Waits until the app has taken every input event sent so far and drawn the frames that
    applied them (the state says a frame began taking events after now, with none left
    queued); returns the state. What an input does at once is then in the state."""
    sent = time.time()
    return wait_state(path, "every input event sent by %.2f taken and applied" % sent,
                      lambda j: j["input"]["polled_at"] > sent and j["input"]["pending"] == 0, proc)


def catch_up(path, proc=None, most=0):
    """Waits until the app's queue of input events not yet handed to a frame holds at most
    `most` (0: every event sent by now taken and applied, as settle). The app hands at most
    0.1 s of input to a frame, so on a slow machine a burst of input drains over many frames:
    the deadline is for a wait in which the app applies nothing, not for the whole drain.
    Returns the state."""
    sent = time.time()

    def caught_up(j):
        return j["input"]["pending"] <= most and (most > 0 or j["input"]["polled_at"] > sent)

    j = wait_state(path, "a state with input counts", lambda j: j["input"]["applied"] >= 0, proc)
    while not caught_up(j):
        # Each wait ends when the app has caught up or applied more than before.
        applied = j["input"]["applied"]
        j = wait_state(path, "the app to take the input sent by %.2f (at most %d queued), or to apply more than %d "
                       "events" % (sent, most, applied), lambda j: caught_up(j) or j["input"]["applied"] > applied,
                       proc)
    return j


def click_until(layout, state, name, done, proc=None, tries=5):
    """Clicks the middle of widget `name` once it has settled, as click_widget, until
    done(state) holds for the state of a frame that took the click. A click without effect
    is sent again while the widget is still shown, and printed: on one starved core (an ASan
    build pinned beside other builds) a click on a just-opened question once left it open
    with every event the app received applied. Returns that state."""
    for attempt in range(tries):
        rect = settled_widget(layout, state, name, proc)
        click(*center(rect))
        j = settle(state, proc)
        if done(j):
            return j
        if name not in read_json(layout)["shown"]:
            break
        print("note: click %d on %s taken without effect; clicking again" % (attempt + 1, name), flush=True)
    return wait_until("a click on %s to take effect" % name, lambda: read_json(state), done, timeout=0, proc=proc)


def judge_speed(what):
    """Whether timings are judged in this build: only an optimised one without sanitizers
    (MHAVIZ_JUDGE_SPEED=1, which CMake gives the tests of such builds). Says so when not."""
    if os.environ.get("MHAVIZ_JUDGE_SPEED") == "1":
        return True
    print("note: speed not judged in this build (MHAVIZ_JUDGE_SPEED=%s): %s" %
          (os.environ.get("MHAVIZ_JUDGE_SPEED", "unset"), what))
    return False


# [SECTION] xdotool. The app queues input (app/gui/logic/input_queue.hpp): a press and its release
# sent together are seen in frames of their own, so nothing waits between events. xdotool
# plays the user: where it may (root), it runs ahead of the load a test is given
# (scripts/slow_machine.sh), so that its keys keep the rhythm asked for (two characters
# within 0.3 s are typing, further apart two shortcuts).
XDOTOOL = (["nice", "-n", "-5"] if os.geteuid() == 0 else []) + ["xdotool"]

# Every xdo call ends with a round trip on its own connection (getmouselocation waits for the
# server's reply), so it returns only once the X server has taken all it sent: a starved
# server may otherwise take the next call's events first. (xdotool type takes every word
# after it as text, so type_text cannot end so: on a server starved by a load of 10 on two
# cores, gui_edit's "extraordinarily" once ended as "extraord", the click after it first.)
ROUND_TRIP = ["getmouselocation"]


def xdo(*args, check=True):
    """check=False: a failure is expected and ignored (the soak acts on unmapped or 1x1 windows)."""
    r = subprocess.run(XDOTOOL + [str(a) for a in args] + ROUND_TRIP, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise subprocess.CalledProcessError(r.returncode, r.args, r.stdout, r.stderr)


def focus_window():
    """Gives the app's window the keyboard, once it is mapped (no window manager: windowfocus)."""
    out = subprocess.run(XDOTOOL + ["search", "--sync", "--onlyvisible", "--name", "^mhaviz"], capture_output=True,
                         text=True, timeout=60).stdout.split()
    if out:
        xdo("windowfocus", "--sync", out[0])
    return out[0] if out else None


def center(rect):
    return (int((rect[0] + rect[2]) / 2), int((rect[1] + rect[3]) / 2))


def drag(x0, y0, x1, y1, steps=8, check=True):
    moves = []
    for i in range(1, steps + 1):
        moves += ["mousemove", int(x0 + (x1 - x0) * i / steps), int(y0 + (y1 - y0) * i / steps)]
    xdo("mousemove", x0, y0, "mousedown", 1, *moves, "mouseup", 1, check=check)


def click(x, y, check=True):
    xdo("mousemove", x, y, "click", 1, check=check)


def click_widget(layout, state, name, proc, origin=(0, 0)):
    """Clicks the middle of a widget once it has settled; origin: the window's top-left on the
    screen (the layout's window_x, window_y) when the window is not at 0, 0."""
    x, y = center(settled_widget(layout, state, name, proc))
    click(origin[0] + x, origin[1] + y)


def key(combo, check=True):
    """Presses and releases the key (combination), with no pause between."""
    xdo("key", "--delay", 0, combo, check=check)


SHIFTED = set('~!@#$%^&*()_+{}|:"<>?')


def type_text(text, delay_ms=12, state=None, proc=None):
    """Characters as a typist sends them (xdotool type, at xdotool's own default pace: it may
    remap a key for a character the keymap lacks). With the app's state file: returns once the
    app has received the events of the text (an ASCII character a press, a character and a
    release, and Shift's press and release around it where it needs one), as xdotool type
    cannot end with the round trip xdo's calls end with."""
    before = settle(state, proc)["input"]["received"] if state else 0
    subprocess.run(XDOTOOL + ["type", "--delay", str(delay_ms), text], check=True, timeout=120)
    if state:
        # A non-ASCII character's key is remapped: count only its press and release.
        events = sum((5 if c.isupper() or c in SHIFTED else 3) if c.isascii() else 2 for c in text)
        wait_state(state, "the app to receive the %d events of typing %r" % (events, text),
                   lambda j: j["input"]["received"] >= before + events, proc)


def gpt2_small_checkpoint(folder, models):
    """Makes the random GPT-2-small-sized checkpoint in folder when missing (make_checkpoints.py
    --gpt2-small, about 500 MB, kept for the next run) and gives it the test tokenizer of
    models/hf_f32 (its ids are GPT-2 ids below 263)."""
    if not os.path.exists(os.path.join(folder, "model.safetensors")):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "make_checkpoints.py")
        subprocess.run(["/usr/bin/python3", script, "--gpt2-small", folder], check=True, timeout=600)
    for f in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(models, "hf_f32", f), folder)


# PNG reader for 8-bit RGB/RGBA, non-interlaced (what stb_image_write produces): (width,
# height, pixel) where pixel(x, y) is the (r, g, b) there. The pixels come from png_pixels
# (MHAVIZ_PNG_PIXELS, which CMake gives the tests) when set, else from the filters undone below.
def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos = 8
    idat = b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and ctype in (2, 6)
            channels = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    decoder = os.environ.get("MHAVIZ_PNG_PIXELS")
    if decoder:
        ppm = subprocess.run([decoder, path], capture_output=True, check=True).stdout
        magic, size, maxval, rgb = ppm.split(b"\n", 3)
        assert magic == b"P6" and maxval == b"255" and tuple(map(int, size.split())) == (width, height)
        assert len(rgb) == width * height * 3, "png_pixels wrote %d bytes for %dx%d" % (len(rgb), width, height)

        def rgb_pixel(x, y):
            i = (y * width + x) * 3
            return tuple(rgb[i:i + 3])

        return width, height, rgb_pixel
    raw = zlib.decompress(idat)
    stride = width * channels
    rows = []
    prev = bytearray(stride)
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append(line)
        prev = line

    def pixel(x, y):
        r = rows[y]
        return tuple(r[x * channels:x * channels + 3])

    return width, height, pixel
