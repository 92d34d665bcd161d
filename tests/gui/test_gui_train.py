"""The Train view as a user drives it, under Xvfb with xdotool: T opens it, Start trains on the
worker thread while the window keeps drawing (the step advances and the loss falls in the
state), Pause writes the checkpoint, which the model loader opens (`mhaviz dump --model`) and
whose step is the state's; training on and closing the window writes the steps since; a head
clicked in the grid is ablated on the probe. Frames per second while training are measured and,
in optimised builds (MHAVIZ_JUDGE_SPEED), held to at least 30 where the machine draws the idle
Train view at 33 or more (measured first, in the same run) and is otherwise quiet; where it
cannot, or other jobs share it, training may cost the window at most half its idle frame rate.

usage (under xvfb-run): test_gui_train.py PATH/TO/mhaviz [data dir]
"""
import json
import os
import re
import struct
import sys
import time

import guitest as g

tmp = g.setup(sys.argv)
lay = os.path.join(tmp, "train.layout.json")
state = os.path.join(tmp, "train.state.json")
state_dir = os.path.join(tmp, "st")


def train_state(what, predicate, proc, timeout=None):
    return g.wait_state(state, what, lambda j: predicate(j["train"]), proc, timeout)["train"]


# Steps trained before Pause: enough for six probe snapshots (one every 25). A sanitizer build
# trains 30–40 times slower (427 tokens/s was seen under ASan with the machine's load at 13):
# there 50 steps, and the wait for them, compute rather than the UI's, gets four deadlines.
OPTIMISED = os.environ.get("MHAVIZ_JUDGE_SPEED") == "1"
STEPS = 150 if OPTIMISED else 50
TRAIN_WAIT = g.WAIT_SECONDS * (1 if OPTIMISED else 4)


def click_widget(name, proc, ox, oy):
    g.click_widget(lay, state, name, proc, (ox, oy))


def checkpoint_step(path):
    """The step in a safetensors file's metadata (8-byte little-endian header size, then JSON)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return int(json.loads(f.read(n))["__metadata__"]["step"])


def loads(path, what):
    r = g.run(["dump", "--model", path, "--ids", "1,2,3,4"])
    g.check(r.returncode == 0 and json.loads(r.stdout).get("model") is not None,
            "%s: the model loader opens it (%s)" % (what, r.stderr.strip()[-200:]))


# The reference: the same view idle at the same size, drawing every frame (--frame-stats).
r = g.run(["gui", "--no-restore", "--config-dir", os.path.join(tmp, "cfg-idle"), "--state-dir", os.path.join(tmp, "st-idle"),
           "--width", "1280", "--height", "800", "--train-until", "0", "--exit-after-frames", "150", "--frame-stats"])
m = re.search(r"frame_median_ms=([0-9.]+)", r.stdout + r.stderr)
g.check(r.returncode == 0 and m is not None, "the idle Train view ran with --frame-stats (%s)" % r.stderr.strip()[-200:])
idle_fps = 1000.0 / float(m.group(1)) if m else 0.0
print("  the idle Train view: %.1f frames/s (median frame)" % idle_fps)

caps = os.path.join(tmp, "captures")
p = g.start(["gui", "--no-restore", "--capture-dir", caps, "--config-dir", os.path.join(tmp, "cfg"), "--state-dir", state_dir,
             "--width", "1280", "--height", "800", "--layout-out", lay, "--state-out", state])
try:
    g.wait_for_layout(lay, ["menu_edit"], proc=p)
    win = g.read_json(lay)
    ox, oy = win["window_x"], win["window_y"]
    g.focus_window()
    g.key("t")
    g.wait_state(state, "the Train view shown (T)", lambda j: j["centre"] == "train", p)
    g.check(not g.read_json(state)["train"]["run"], "no run before Start")

    # Start: the step advances and the loss falls from its first value, while frames come.
    click_widget("train_start", p, ox, oy)
    t0 = train_state("training started", lambda t: t.get("running") and t["step"] >= 1, p)
    s0 = g.read_json(state)
    frames0, time0 = s0["frames"], time.time()
    t = train_state("the step past %d and the loss down from the first step's by 0.2" % STEPS,
                    lambda t: t["step"] >= STEPS and t["loss"] < t["first_loss"] - 0.2, p, TRAIN_WAIT)
    s1 = g.read_json(state)
    fps = (s1["frames"] - frames0) / (time.time() - time0)
    g.check(t["step"] > t0["step"], "the step advanced (%d -> %d)" % (t0["step"], t["step"]))
    g.check(t["loss"] < t["first_loss"], "the loss fell (%.3f -> %.3f)" % (t["first_loss"], t["loss"]))
    g.check(t["probes"] >= STEPS // 25, "the probe measured every 25 steps (%d snapshots)" % t["probes"])
    # The machine's load says how far the figure is the app's: other jobs on two cores slow the
    # frames of every view (llvmpipe draws on the same cores).
    load = os.getloadavg()[0]
    print("  frames while training: %.1f frames/s over %d steps, %.0f tokens/s, load average %.1f" %
          (fps, t["step"] - t0["step"], t["tokens_per_s"], load))
    if g.judge_speed("%.1f frames/s while training" % fps):
        # The app itself makes about 2 of the load average (the window and the trainer) and
        # ctest's other test about 1: above 3.5, other jobs share the two cores, and frames
        # while training were seen at 22-27 against 34-46 idle measured a minute earlier
        # (load 5-7): the absolute figure is judged on a machine that is the app's.
        if idle_fps >= 33 and load <= 3.5:
            g.check(fps >= 30, "the window draws at 30 frames/s or more while training (%.1f; idle %.1f; load average %.1f)" %
                    (fps, idle_fps, load))
        else:
            print("note: this machine draws the idle view at %.1f frames/s (load average %.1f): 30 while training is "
                  "not judged here, training's cost is" % (idle_fps, load))
            g.check(fps >= 0.5 * idle_fps, "training costs the window at most half its idle frame rate (%.1f of %.1f)" %
                    (fps, idle_fps))

    # Pause: the checkpoint is written at the step paused, in a run folder under --state-dir.
    click_widget("train_pause", p, ox, oy)
    t = train_state("paused and the checkpoint written at that step",
                    lambda t: not t["running"] and t["saved_step"] == t["step"], p)
    ck = t["checkpoint"]
    g.check(ck.startswith(os.path.join(state_dir, "runs")) and os.path.isfile(ck),
            "the checkpoint is in a run folder under the state folder (%s)" % ck)
    g.check(checkpoint_step(ck) == t["step"], "its step is the one paused at (%d)" % t["step"])
    g.check(os.path.isfile(os.path.join(os.path.dirname(ck), "config.json")), "config.json beside it")
    g.check("train_checkpoint" in g.read_json(lay)["shown"], "the panel says where it is")
    loads(ck, "the paused run's checkpoint")
    # F12 captures what is shown, the Train view, named after the run and its step.
    g.key("F12")
    pngs = g.wait_until("F12's capture written", lambda: [n for n in os.listdir(caps) if n.endswith(".png")],
                        lambda v: len(v) == 1, proc=p)
    run = os.path.basename(os.path.dirname(ck))
    g.check(pngs[0] == "%s-step%d-train.png" % (run, t["step"]), "F12 captured the Train view (%s)" % pngs[0])
    with open(os.path.join(os.path.dirname(ck), "log.jsonl")) as f:
        lines = [json.loads(x) for x in f]
    g.check(len(lines) == t["step"] and lines[-1]["step"] == t["step"], "log.jsonl holds every step (%d)" % len(lines))

    # A head of layer 1, clicked in the grid, then ablated: the probe's loss on the copy changes.
    heads = [h for h in g.read_json(state)["figure"]["display_list"]["hits"] if h["id"] == "thumb_1_1"]
    if g.check(len(heads) == 1, "the grid shows head 1.1"):
        fig = g.read_json(state)["figure"]
        h = heads[0]
        g.click(ox + int(fig["origin"][0] + (h["x0"] + h["x1"]) / 2), oy + int(fig["origin"][1] + (h["y0"] + h["y1"]) / 2))
        train_state("head 1.1 selected", lambda t: (t["layer"], t["head"]) == (1, 1), p)
        click_widget("train_ablate", p, ox, oy)
        a = train_state("the ablation measured", lambda t: t["ablation"]["head"] == 1, p)["ablation"]
        g.check(a["step"] == t["step"] and a["loss_ablated"] != a["loss"],
                "ablating head 1.1 changes the probe's loss (%.3f -> %.3f)" % (a["loss"], a["loss_ablated"]))

    # Train on, then close: the steps since the pause are written.
    click_widget("train_start", p, ox, oy)
    train_state("training again past the checkpoint", lambda t: t["running"] and t["step"] > t["saved_step"] + 5, p)
    status, _, err = g.stop(p)
    g.check(status == 0, "the app closes while training (exit %s: %s)" % (status, err.strip()[-200:]))
    t = g.read_json(state)["train"]
    g.check(not t["running"] and t["saved_step"] == t["step"] and checkpoint_step(ck) == t["step"],
            "closing wrote the checkpoint at the last step (%d, file %d)" % (t["step"], checkpoint_step(ck)))
    loads(ck, "the checkpoint written on closing")
finally:
    if p.poll() is None:
        g.stop(p)

# A 1024 x 768 window with a 24-pixel font leaves the view 600 x 522: too short and narrow for
# the plots beside the loss and the heads under them (10-pixel heads, "duplicate-tok…"). The loss,
# the detectors and the heads go one under the other, in a figure taller than the canvas (it
# scrolls), never wider; the heads 30 px at least, every detector's title whole.
small = os.path.join(tmp, "small.state.json")
r = g.run(["gui", "--no-restore", "--config-dir", os.path.join(tmp, "cfg-small"), "--state-dir",
           os.path.join(tmp, "st-small"), "--width", "1024", "--height", "768", "--font-size", "24", "--train-until",
           "25", "--exit-after-frames", "20", "--state-out", small])
fig = g.read_json(small)["figure"] if r.returncode == 0 else None
if g.check(fig is not None and fig["name"] == "train", "the small window's Train view ran (%s)" % r.stderr.strip()[-200:]):
    dl = fig["display_list"]
    g.check(dl["height"] > fig["canvas"][1] and dl["width"] <= fig["canvas"][0] + 1,
            "1024 x 768 at 24 px: the figure taller than its canvas, never wider (%d x %d in %s)"
            % (dl["width"], dl["height"], fig["canvas"]))
    sides = [h["x1"] - h["x0"] for h in dl["hits"] if h["id"].startswith("thumb_")]
    g.check(len(sides) == 8 and min(sides) >= 30, "the 8 heads 30 px at least (%s)" % sides)
    titles = [x["text"] for x in dl["prims"] if x.get("class") == "plot-title"]
    g.check(len(titles) == 5 and not any("\u2026" in t for t in titles), "every plot's title whole (%s)" % titles)
g.finish()
