"""The bonus variants' controls with real input (xdotool): gqa's walkthrough (the expansion of its
K/V heads, and the .repeat mistake with its mis-paired scores), a gqa session's K/V heads slider
offers only divisors of num_heads, QK-norm and RoPE turn on and off, the sliding window
follows the causal mask, num_heads with RoPE on offers only even head_dims, and W then walks
through QK-norm and RoPE (the scores beside the unrotated ones). The state the app writes must
follow each step, valid.

usage (under xvfb-run): test_gui_variants.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import os
import re
import sys

import guitest as g

tmp = g.setup(sys.argv)
session_path = os.path.join(tmp, "gqa.json")
with open(session_path, "w") as f:
    json.dump({"format": "mhaviz-session", "version": 3,
               "tokens": ["Your", "journey", "starts", "with", "one", "step"],
               "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                              [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]],
               "batch": 1,
               "model": {"variant": "gqa", "d_out": 8, "num_heads": 4, "num_kv_groups": 2,
                         "context_length": 6, "dropout": 0.0, "qkv_bias": False, "causal": True,
                         "seed": 123}}, f)
layout = os.path.join(tmp, "layout.json")
state = os.path.join(tmp, "state.json")
proc = g.start(["gui", session_path, "--no-restore", "--check-gl", "--width", "1280", "--height", "800",
                "--config-dir", os.path.join(tmp, "cfg"), "--state-dir", os.path.join(tmp, "st"),
                "--layout-out", layout, "--state-out", state])


def model():
    return g.read_json(state)["session"]["model"]


def wait_model(what, predicate):
    j = g.wait_state(state, what, lambda j: predicate(j["session"]["model"]) and not j["error"], proc)
    return j["session"]["model"]


def slider_end(name, right):
    x0, y0, x1, y1 = g.settled_widget(layout, state, name, proc)
    cy = int((y0 + y1) / 2)
    g.drag(int((x0 + x1) / 2), cy, int(x1) - 2 if right else int(x0) + 2, cy)


def pairs(labels):
    """(query head, K/V head) of block labels "head 1 ← kv 0" or, narrower, "h1←kv0"."""
    return [tuple(int(n) for n in re.findall(r"\d+", l)) for l in labels]


def walk(what, predicate):
    return g.wait_state(state, what, lambda j: j["centre"] == "walkthrough" and predicate(j["walk"]), proc)["walk"]


try:
    g.wait_for_layout(layout, ["kv_heads", "variant_options", "num_heads", "variant"], proc=proc)
    g.focus_window()
    # W: gqa's walkthrough, its K/V heads expanded to the query heads by repeat_interleave; the
    # mistake checkbox swaps in .repeat, which pairs query heads 1 and 2 with the wrong K/V head.
    g.click(5, 795)
    g.key("w")
    walk("W opens gqa's walkthrough", lambda w: True)
    g.click_widget(layout, state, "walk_chip_5", proc)
    w = walk("chip 5: the expansion", lambda w: any(t.startswith("keys.repeat_interleave") for t in w["titles"]))
    g.check(pairs(w["block_labels"]) == [(h, h // 2) for h in range(4)],
            "expansion: each query head names the K/V head it reads (%s)" % w["block_labels"])
    g.click_widget(layout, state, "walk_mistake", proc)
    w = walk("the mistake: .repeat", lambda w: any(t.startswith("keys.repeat ") for t in w["titles"]))
    g.check(pairs(w["block_labels"]) == [(h, h % 2) for h in range(4)],
            "mistake: query head i reads K/V head i mod 2 (%s)" % w["block_labels"])
    g.check(any("red outlines" in l for l in w["inspector"]), "mistake: the inspector explains the outlines (%s)" % w["inspector"])
    g.click_widget(layout, state, "walk_chip_6", proc)
    w = walk("chip 6: the mis-paired heads' scores", lambda w: any("mis-paired" in t for t in w["titles"]))
    g.check(any("correct: repeat_interleave" in t for t in w["operand_titles"]),
            "mistake: the correct scores beside the wrong ones (%s)" % w["operand_titles"])
    g.click_widget(layout, state, "walk_mistake", proc)
    walk("mistake off: the scores", lambda w: w["titles"] and w["titles"][0].startswith("attn_scores "))
    g.key("w")
    g.wait_state(state, "W again: back to the lesson", lambda j: j["centre"] == "lesson", proc)
    # The window, QK-norm and RoPE sit in a section closed while none is on.
    g.click_widget(layout, state, "variant_options", proc)
    g.wait_for_layout(layout, ["window", "qk_norm", "rope"], proc=proc)
    # K/V heads: 4 query heads allow 1, 2, 4; the left end is multi-query attention.
    slider_end("kv_heads", right=False)
    wait_model("K/V heads slider to its left end: 1 (multi-query)", lambda m: m["num_kv_groups"] == 1)
    slider_end("kv_heads", right=True)
    wait_model("K/V heads slider to its right end: 4 (one per query head)", lambda m: m["num_kv_groups"] == 4)
    # QK-norm, then RoPE (base 10,000 when turned on).
    g.click_widget(layout, state, "qk_norm", proc)
    wait_model("QK-norm on", lambda m: m.get("qk_norm") is True)
    g.click_widget(layout, state, "rope", proc)
    wait_model("RoPE on at base 10000", lambda m: m.get("rope_base") == 10000)
    # num_heads with RoPE on: d_out 8 offers 1, 2, 4 (head_dim 8, 4, 2), never 8 (head_dim 1).
    slider_end("num_heads", right=True)
    m = wait_model("num_heads slider to its right end: 4, the most heads of an even head_dim",
                   lambda m: m["num_heads"] == 4)
    g.check(m["num_kv_groups"] in (1, 2, 4), "K/V heads stay a divisor of num_heads (%d)" % m["num_kv_groups"])
    # The window: its right end is every token; turning the causal mask off takes it away.
    slider_end("window", right=True)
    wait_model("sliding window to its right end: 6 tokens", lambda m: m.get("sliding_window") == 6)
    g.click_widget(layout, state, "causal", proc)
    wait_model("causal mask off takes the window with it", lambda m: not m["causal"] and "sliding_window" not in m)
    # W: gqa with QK-norm and RoPE walks through the norm (chip 5) and the rotation (chip 6)
    # before the expansion, and shows the scores without the rotation beside the rotated ones.
    g.click(5, 795)
    g.key("w")
    walk("W opens the walkthrough with QK-norm and RoPE", lambda w: True)
    g.click_widget(layout, state, "walk_chip_5", proc)
    walk("chip 5: QK-norm", lambda w: w["titles"] and w["titles"][0].startswith("q_normed "))
    g.click_widget(layout, state, "walk_chip_6", proc)
    w = walk("chip 6: RoPE", lambda w: w["titles"] and w["titles"][0].startswith("q_rotated "))
    g.check(any(t.startswith("k_rotated ") for t in w["operand_titles"]), "RoPE: k rotated beside q (%s)" % w["operand_titles"])
    g.click_widget(layout, state, "walk_chip_8", proc)
    w = walk("chip 8: the scores", lambda w: w["titles"] and w["titles"][0].startswith("attn_scores "))
    g.check(any("without RoPE" in t for t in w["operand_titles"]), "scores: without RoPE beside them (%s)" % w["operand_titles"])
    g.key("w")
    st = g.wait_state(state, "W again: back to the lesson", lambda j: j["centre"] == "lesson", proc)
    # RoPE off again.
    g.click_widget(layout, state, "rope", proc)
    wait_model("RoPE off", lambda m: "rope_base" not in m)
finally:
    rc, out, err = g.stop(proc)

g.check(rc == 0, "app exits 0 after SIGTERM (got %d; stderr: %s)" % (rc, err.strip()))
final = model()
print("  final model: %s" % json.dumps(final, sort_keys=True))
g.check(final["variant"] == "gqa" and final.get("qk_norm") is True, "the session stays gqa with QK-norm")
g.finish()
