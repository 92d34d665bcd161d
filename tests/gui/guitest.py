"""Helpers for the GUI tests: run the real `mhaviz` under the X server the test runs in
(xvfb-run starts it), drive it with xdotool, read PNG captures. Python stdlib only."""
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


def run(args, timeout=120, **kw):
    """Runs mhaviz to completion; returns CompletedProcess."""
    return subprocess.run([MHAVIZ] + args, capture_output=True, text=True, timeout=timeout, **kw)


def start(args):
    return subprocess.Popen([MHAVIZ] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc, timeout=30):
    """Asks the app to quit (SIGTERM: state written, nothing asked) and waits."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def wait_for_file(path, timeout=30.0, proc=None):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            time.sleep(0.1)
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def read_json(path):
    with open(path) as f:
        return json.load(f)


def wait_for_layout(path, names, timeout=30.0, proc=None):
    """Waits until the layout file lists every widget in names; returns the widgets."""
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            try:
                w = read_json(path)["widgets"]
                if all(n in w for n in names):
                    return w
            except (ValueError, KeyError):
                pass
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("widgets %s never appeared in %s" % (names, path))


# xdotool, one action per call, with pauses so that every press and release lands in
# its own frame (Dear ImGui 1.86 drops a press and release within one frame).
PAUSE = 0.15


def xdo(*args, check=True):
    """check=False: a failure is expected and ignored (the soak acts on unmapped or 1x1 windows)."""
    subprocess.run(["xdotool"] + [str(a) for a in args], check=check, capture_output=not check, timeout=20)
    time.sleep(PAUSE)


def focus_window():
    out = subprocess.run(["xdotool", "search", "--sync", "--name", "^mhaviz"], capture_output=True, text=True,
                         timeout=20).stdout.split()
    if out:
        xdo("windowfocus", "--sync", out[0])
    return out[0] if out else None


def center(rect):
    return (int((rect[0] + rect[2]) / 2), int((rect[1] + rect[3]) / 2))


def drag(x0, y0, x1, y1, steps=8, check=True):
    xdo("mousemove", x0, y0, check=check)
    xdo("mousedown", 1, check=check)
    for i in range(1, steps + 1):
        xdo("mousemove", int(x0 + (x1 - x0) * i / steps), int(y0 + (y1 - y0) * i / steps), check=check)
    xdo("mouseup", 1, check=check)


def click(x, y, check=True):
    xdo("mousemove", x, y, check=check)
    xdo("mousedown", 1, check=check)
    xdo("mouseup", 1, check=check)


def key(combo, check=True):
    """Holds the key (combination) across frames, then releases it."""
    xdo("keydown", combo, check=check)
    time.sleep(0.1)
    xdo("keyup", combo, check=check)


def type_text(text):
    for ch in text:
        name = {" ": "space", "/": "slash", ".": "period", "-": "minus", "_": "underscore"}.get(ch, ch)
        key(name)


# PNG reader for 8-bit RGB/RGBA, non-interlaced (what stb_image_write produces).
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
