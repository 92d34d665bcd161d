"""In-app capture (issue 5), driven by real keys and clicks under Xvfb:

- F12 saves what is shown (the grid of heads; the enlarged head; the walkthrough step) as a
  PNG of the figure on screen at the capture scale (2): exactly twice its logical size (that it
  is the screen's figure, and render's, is test_gui_figures.py's);
- a second F12 never replaces the first file (name-2.png), nor does the Capture button (-3);
- Shift+F12 saves the whole window at the window's size;
- Capture > Grid of heads (SVG) writes an SVG with one rect per cell;
- Capture > Save as LaTeX writes the matrix shown, equal to `mhaviz export`;
- the notice in the status bar names the saved path.

usage (under xvfb-run): test_gui_capture.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import hashlib
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import guitest as g

tmp = g.setup(sys.argv)
caps = os.path.join(tmp, "captures")
layout = os.path.join(tmp, "layout.json")
state = os.path.join(tmp, "state.json")


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def logical_size(path):
    """Twice the logical size the capture's sidecar (--capture-sidecars) gives. The sidecar is
    written after the picture (under the name the picture got), so it is waited for."""
    g.wait_for_file(path + ".json", proc=proc)
    side = g.read_json(path + ".json")
    return side["width"] * 2, side["height"] * 2


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def expect(name, proc):
    path = os.path.join(caps, name)
    ok = g.wait_for_file(path, proc=proc)
    g.check(ok, "%s saved" % name)
    return path if ok else None


def menu_item(w, name):
    """Capture > the item recorded as `name` in the layout, by mouse, where the menu settled."""
    g.click(*g.center(w["menu_capture"]))
    g.click(*g.center(g.settled_widget(layout, state, name, proc)))


def shown(what, predicate):
    """Waits until the state says the view a capture is about to take is drawn."""
    g.wait_state(state, what, predicate, proc)


proc = g.start(["gui", "seed003-wrapper", "--no-restore", "--check-gl", "--width", "1280", "--height", "800",
                "--config-dir", os.path.join(tmp, "cfg"), "--state-dir", os.path.join(tmp, "st"),
                "--capture-dir", caps, "--capture-sidecars", "--layout-out", layout, "--state-out", state])
try:
    w = g.wait_for_layout(layout, ["capture_button", "menu_capture"], proc=proc)
    g.focus_window()

    g.key("F12")
    first = expect("seed003-wrapper-heads-weights.png", proc)
    if first:
        want = logical_size(first)
        g.check(png_size(first) == want, "F12 on the grid: %s = 2 x its logical size %s" % (png_size(first), want))
        before = digest(first)
        g.key("F12")
        second = expect("seed003-wrapper-heads-weights-2.png", proc)
        g.check(digest(first) == before, "the first capture is untouched by the second")
        if second:
            g.check(png_size(second) == want, "the second capture has the same size")

    g.click(*g.center(w["capture_button"]))
    expect("seed003-wrapper-heads-weights-3.png", proc)

    g.key("shift+F12")
    win = expect("seed003-wrapper-window.png", proc)
    if win:
        g.check(png_size(win) == (1280, 800), "Shift+F12: the whole window, 1280x800 (got %s)" % (png_size(win),))

    g.key("e")  # enlarge the selected head (0)
    shown("E enlarges head 0", lambda j: j["enlarged"])
    g.key("F12")
    head = expect("seed003-wrapper-head0-weights.png", proc)
    if head:
        want = logical_size(head)
        g.check(png_size(head) == want, "F12 on the enlarged head: %s = 2 x its logical size %s" % (png_size(head), want))
    g.key("e")
    shown("E again: the grid", lambda j: not j["enlarged"])

    g.key("w")  # walkthrough, first step
    shown("W opens the walkthrough", lambda j: j["walkthrough"] and j["walk"]["cells"] > 0)
    g.key("F12")
    step = expect("seed003-wrapper-step1.png", proc)
    if step:
        want = logical_size(step)
        g.check(png_size(step) == want, "F12 in the walkthrough: %s = 2 x its logical size %s" % (png_size(step), want))
    g.key("w")
    shown("W again: the grid", lambda j: not j["walkthrough"])

    # Capture > Save as LaTeX: the matrix shown (head 0, weights, batch item 0).
    menu_item(w, "capture_save_latex")
    tex = expect("seed003-wrapper-weights-b0-head0.tex", proc)
    if tex:
        r = subprocess.run([g.MHAVIZ, "export", "seed003-wrapper", "--tensor", "attn_weights", "--format", "latex",
                            "--select", "0,0"], capture_output=True, text=True, timeout=600)
        g.check(open(tex).read() == r.stdout, "Save as LaTeX = mhaviz export --format latex --select 0,0")

    # Capture > Grid of heads (SVG): a vector figure, one rect per cell.
    menu_item(w, "capture_grid_svg")
    svg = expect("seed003-wrapper-heads-weights.svg", proc)
    if svg:
        root = ET.parse(svg).getroot()
        cells = [e for e in root.iter() if e.tag.endswith("rect") and "cell" in e.get("class", "").split()]
        g.check(len(cells) == 2 * 6 * 6, "SVG of the grid parses as XML with one rect per cell (%d, want 72)" % len(cells))
    shown("the notice names the SVG", lambda j: j["status"].startswith("Saved " + svg))
finally:
    rc, out, err = g.stop(proc)

g.check(rc == 0, "app exits 0 (got %d; stderr: %s)" % (rc, err.strip()))
st = g.read_json(state)
g.check(st["status"].startswith("Saved " + caps), "the notice names the saved path (%r)" % st["status"])
left = sorted(n for n in os.listdir(caps) if not n.endswith(".json")) if os.path.isdir(caps) else []
g.check(not [n for n in left if n.startswith(".")], "no temporary files left in the capture folder (%s)" % left)
print("  captures: " + ", ".join(left))
g.finish()
