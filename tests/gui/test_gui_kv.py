"""The KV cache view as a user drives it, under Xvfb with xdotool: K opens it on a GQA lesson of
6 query heads over 2 K/V heads with a sliding window of 3; the prefill slider's P, the arrow
keys, Home, End and the Step button move through the decode, the state saying after each which
rows the cache holds, which it evicted and its bytes, as the window's rolling buffer must;
F12 captures the figure on screen, and `mhaviz render --view kv-step` with the same canvas and
font draws the very same PNG; beside the steps, the memory plot of the lesson's module ends at
the memory table's bytes. On a 1024 x 768 window its switches and buttons stay inside the window,
also with a 20-pixel font.

usage (under xvfb-run): test_gui_kv.py PATH/TO/mhaviz [data dir]
"""
import json
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
lay = os.path.join(tmp, "kv.layout.json")
state = os.path.join(tmp, "kv.state.json")
caps = os.path.join(tmp, "captures")

words = "Your journey starts with one step and then another".split()
T, W, G, H, HD = len(words), 3, 2, 6, 2
session = {"format": "mhaviz-session", "version": 3, "tokens": words,
           "embeddings": [[round(((i * 7 + j * 3) % 11) / 5.0 - 1.0, 2) for j in range(4)] for i in range(T)],
           "batch": 1,
           "model": {"variant": "gqa", "d_out": H * HD, "num_heads": H, "num_kv_groups": G, "sliding_window": W,
                     "context_length": T, "dropout": 0.0, "qkv_bias": False, "causal": True, "seed": 123}}
path = os.path.join(tmp, "gqa-swa.json")
with open(path, "w") as f:
    json.dump(session, f)


def kv_state(what, predicate, proc):
    return g.wait_state(state, what, lambda j: j["centre"] == "kv-cache" and predicate(j["kv"]), proc)["kv"]


def expect_step(kv, prefill, step):
    """The window's rolling buffer after `step`: the last min(end, W) rows, the ones before evicted."""
    end = prefill + step
    held = [max(0, end - W), end]
    g.check(kv["held"] == held, "step %d (P %d): the cache holds rows %s (%s)" % (step, prefill, held, kv["held"]))
    left = [0, held[0]] if step == 0 else [max(0, end - 1 - W), held[0]]
    g.check(kv["evicted"] == left, "step %d: rows %s evicted at it (%s)" % (step, left, kv["evicted"]))
    g.check(kv["bytes"] == (held[1] - held[0]) * 2 * G * HD * 4,
            "step %d: %d bytes = rows x K and V x %d K/V heads x %d x 4 (%d)" % (step, (held[1] - held[0]) * 2 * G * HD * 4,
                                                                               G, HD, kv["bytes"]))


p = g.start(["gui", path, "--no-restore", "--capture-dir", caps, "--config-dir", os.path.join(tmp, "cfg"),
             "--state-dir", os.path.join(tmp, "st"), "--width", "1280", "--height", "800", "--layout-out", lay,
             "--state-out", state])
try:
    g.wait_for_layout(lay, ["menu_edit"], proc=p)
    win = g.read_json(lay)
    origin = (win["window_x"], win["window_y"])
    g.focus_window()
    g.key("k")
    kv = kv_state("the KV cache view shown (K) on the prefill", lambda k: k.get("steps") == T and k["step"] == 0, p)
    expect_step(kv, 1, 0)
    g.check(g.read_json(state)["figure"]["name"] == "kv", "the centre draws the KV cache figure")
    for step in (1, 2, 3, 4):
        g.key("Right")
        kv = kv_state("step %d (Right)" % step, lambda k, s=step: k["step"] == s, p)
        expect_step(kv, 1, step)
    g.click_widget(lay, state, "kv_next", p, origin)
    expect_step(kv_state("step 5 (the Step button)", lambda k: k["step"] == 5, p), 1, 5)
    g.key("End")
    expect_step(kv_state("the last step (End)", lambda k: k["step"] == T - 1, p), 1, T - 1)
    g.key("Right")
    g.settle(state, p)
    g.check(g.read_json(state)["kv"]["step"] == T - 1, "Right at the last step stays there")
    g.key("Home")
    kv_state("the prefill again (Home)", lambda k: k["step"] == 0, p)

    # The prefill slider: P = 5 rows at once, two of which the window evicts in the prefill itself.
    x0, y0, x1, y1 = g.settled_widget(lay, state, "kv_prefill", p)  # the slider's frame: 1 to T, 5 in the middle
    g.click(origin[0] + int((x0 + x1) / 2), origin[1] + int((y0 + y1) / 2))
    kv = kv_state("the prefill at 5 rows (the slider)", lambda k: k["prefill"] == 5 and k.get("decoded_prefill") == 5, p)
    g.check(kv["steps"] == T - 5 + 1, "P = 5: the prefill and %d steps (%d)" % (T - 5, kv["steps"] - 1))
    expect_step(kv, 5, 0)
    g.key("Right")
    g.key("Right")
    kv = kv_state("two steps after the prefill of 5", lambda k: k["step"] == 2, p)
    expect_step(kv, 5, 2)

    # F12: the figure shown, which render draws alike for the same canvas and font.
    g.key("F12")
    st = g.wait_state(state, "a capture written (F12)", lambda j: j["last_capture"].endswith(".png"), p)
    shot = st["last_capture"]
    g.check(os.path.basename(shot).startswith("gqa-swa-kv-step2"), "the capture names the step (%s)" % shot)
    fig = st["figure"]
    out = os.path.join(tmp, "render.png")
    r = g.run(["render", path, "--view", "kv-step", "--decode-from", "5", "--step", "2", "-o", out, "--size",
               "%dx%d" % (fig["canvas"][0], fig["canvas"][1]), "--font", str(fig["font"])])
    g.check(r.returncode == 0, "render --view kv-step ran (%s)" % r.stderr.strip())
    with open(shot, "rb") as a, open(out, "rb") as b:
        g.check(a.read() == b.read(), "render --view kv-step draws the capture's very bytes")

    # Beside the steps, the memory plot: the lesson's module, MHA against its 2 K/V heads and the window.
    g.click_widget(lay, state, "kv_memory", p, origin)
    st = g.wait_state(state, "the memory plot shown", lambda j: j["kv"]["memory"] and j["figure"] and any(
        pr.get("text", "").startswith("GQA + SWA") for pr in j["figure"]["display_list"]["prims"]), p)
    texts = [pr.get("text", "") for pr in st["figure"]["display_list"]["prims"] if pr.get("class") == "end-value"]
    # One layer of 6 heads of 2 at 9 tokens in fp32: MHA 9 x 6 x 2 x 2 x 4 = 864 bytes, GQA 288, GQA + SWA 3 rows: 96.
    g.check(sorted(texts) == ["GQA + SWA 96 bytes", "GQA 288 bytes", "MHA + SWA 288 bytes", "MHA 864 bytes"],
            "the plot ends at the memory table's bytes (%s)" % texts)
    g.key("F12")
    st = g.wait_state(state, "the plot captured (F12)", lambda j: "kv-memory-lesson" in j["last_capture"], p)
    g.check(os.path.getsize(st["last_capture"]) > 0, "the capture was written (%s)" % st["last_capture"])
    g.key("k")
    g.wait_state(state, "back to the lesson (K)", lambda j: j["centre"] == "lesson", p)
finally:
    status, _, err = g.stop(p)
g.check(status == 0, "the app quit with status 0 (%s)" % err.strip()[-300:])

# A 1024 x 768 window (a classroom projector's): the toolbar and the memory plot's model
# switch wrap onto another line rather than going past the window's edge.
lay2, state2 = os.path.join(tmp, "narrow-layout.json"), os.path.join(tmp, "narrow-state.json")
p = g.start(["gui", path, "--no-restore", "--config-dir", os.path.join(tmp, "cfg2"), "--state-dir",
             os.path.join(tmp, "st2"), "--width", "1024", "--height", "768", "--kv-step", "3,2", "--layout-out", lay2,
             "--state-out", state2])
try:
    g.wait_for_layout(lay2, ["kv_last", "kv_memory"], proc=p)
    win = g.read_json(lay2)
    g.focus_window()
    g.click_widget(lay2, state2, "kv_memory", p, (win["window_x"], win["window_y"]))
    st = g.wait_state(state2, "the memory plot shown", lambda j: j["kv"]["memory"] and "kv_model" in j["shown"], p)
    out = [n for n in ("kv_steps", "kv_memory", "kv_model") if st["widgets"][n][2] > 1024]
    g.check(not out, "1024 x 768: the memory plot's switches inside the window (%s not)" % out)
finally:
    status, _, err = g.stop(p)
g.check(status == 0, "the narrow window's app quit with status 0 (%s)" % err.strip()[-300:])

# The same window with the font at 20 pixels: the step buttons wrap too ("End >|" was cut).
state3 = os.path.join(tmp, "narrow-font.state.json")
r = g.run(["gui", path, "--no-restore", "--config-dir", os.path.join(tmp, "cfg3"), "--state-dir",
           os.path.join(tmp, "st3"), "--width", "1024", "--height", "768", "--font-size", "20", "--kv-step", "3,2",
           "--exit-after-frames", "12", "--state-out", state3])
wd = g.read_json(state3)["widgets"] if r.returncode == 0 else {}
out = [n for n in ("kv_first", "kv_back", "kv_next", "kv_last") if n not in wd or wd[n][2] > 1024]
g.check(not out, "1024 x 768 at 20 px: every step button inside the window (%s not)" % out)

# At 24 px the canvas is too short for four K/V heads' blocks at readable cells (their rows were
# 1 px, "keys" over "values"): the figure is drawn taller, and the wheel over it scrolls it up
# under the toolbar, which stays.
four = dict(session, model=dict(session["model"], num_heads=4, d_out=8, num_kv_groups=4))
path4 = os.path.join(tmp, "four-kv-heads.json")
with open(path4, "w") as f:
    json.dump(four, f)
lay4, state4 = os.path.join(tmp, "tall-layout.json"), os.path.join(tmp, "tall-state.json")
p = g.start(["gui", path4, "--no-restore", "--config-dir", os.path.join(tmp, "cfg4"), "--state-dir",
             os.path.join(tmp, "st4"), "--width", "1024", "--height", "768", "--font-size", "24", "--kv-step", "3,2",
             "--layout-out", lay4, "--state-out", state4])
try:
    g.wait_for_layout(lay4, ["kv_last", "kv_block_3"], proc=p)
    win = g.read_json(lay4)
    st = g.wait_state(state4, "the KV figure drawn", lambda j: j["figure"] and j["figure"]["name"] == "kv", p)
    fig, wd = st["figure"], st["widgets"]
    size = [fig["display_list"]["width"], fig["display_list"]["height"]]
    g.check(size[1] > fig["canvas"][1] and size[0] <= fig["canvas"][0] + 1,
            "1024 x 768 at 24 px: the figure taller than its canvas, never wider (%s in %s)" % (size, fig["canvas"]))
    cells = [(h["y1"] - h["y0"]) / h["rows"] for h in fig["display_list"]["heatmaps"]]
    g.check(cells and min(cells) >= 24, "rows a line of labels tall at least (%s px)" % cells)
    top, last = wd["kv_block_0"][1], wd["kv_block_3"]
    bar = wd["kv_last"]
    g.focus_window()
    x = win["window_x"] + int((last[0] + last[2]) / 2)
    y = win["window_y"] + int((wd["kv_block_0"][1] + wd["kv_block_0"][3]) / 2)
    g.xdo("mousemove", x, y, "click", "--repeat", 8, "--delay", 30, 5)
    st = g.wait_state(state4, "the figure scrolled by the wheel",
                      lambda j: j["widgets"].get("kv_block_0", [0, top])[1] < top - 40, p)
    g.check(st["widgets"]["kv_last"] == bar, "the step buttons stay where they were (%s, %s)"
            % (st["widgets"]["kv_last"], bar))
finally:
    status, _, err = g.stop(p)
g.check(status == 0, "the tall figure's app quit with status 0 (%s)" % err.strip()[-300:])
g.finish()
