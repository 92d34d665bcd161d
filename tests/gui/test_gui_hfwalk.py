"""A layer of today's open models in the walkthrough (issue 25), the real app under Xvfb, on
the Qwen3-shaped and Gemma-3-shaped checkpoints of make_modern_checkpoints.py (random weights,
with the small byte-level tokenizer.json of tests/models/small_tokenizer.py).

- `gui --model FOLDER --text TEXT --model-head L.H`, then "Open layer in the walkthrough" in
  the panel: the document is that layer (origin and title "layer L of FOLDER"), the book's
  GroupedQueryAttention with the layer's options (K/V heads, QK-norm, RoPE base, the window
  and Gemma's query scale on a sliding layer), the tokens as dump spells them, the head
  chosen in the model view selected, the walkthrough on its first step.
- Its steps include QK-norm, RoPE and the K/V expansion; the softmax step's cells are dump's
  weights of that layer (head 0); F12 at the mask step saves the step with its sidecar, whose
  cells outside the window are hatched on the Gemma sliding layer and on no Qwen3 layer.
- `render --model FOLDER --view layer L` draws the layer through the same module (exit 0).
- A Llama with attention_bias (an o_proj bias the gqa module has not): the reason where the
  button would be, none in the toolbar, render --view layer refused in the same words.

usage (under xvfb-run): test_gui_hfwalk.py PATH/TO/mhaviz MODERN_DIR
"""
import json
import os
import sys

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from small_tokenizer import hf_folder, read_raw_safetensors, write_raw_safetensors  # noqa: E402

tmp = g.setup(sys.argv)
MODERN = sys.argv[2]
TEXT = "hello world"
SIZE = ["--width", "1600", "--height", "900"]


def chip(model, name):
    """The 1-based chip of a step of gqa with the layer's options (layout_steps.cpp's order)."""
    steps = ["input", "project", "view", "transpose"] + (["qk_norm"] if model.get("qk_norm") else []) + \
        (["rope"] if model.get("rope_base") else []) + ["expand", "scores", "mask", "softmax"]
    return steps.index(name) + 1


def window_hatches(sidecar):
    prims = g.read_json(sidecar)["prims"]
    return sum(1 for p in prims if "masked window" in p.get("class", ""))


def check_layer(name, folder, layer, head, want):
    lay = os.path.join(tmp, name + ".layout.json")
    state = os.path.join(tmp, name + ".state.json")
    caps = os.path.join(tmp, name + "-caps")
    base = os.path.basename(folder.rstrip("/"))
    args = ["gui", "--model", folder, "--text", TEXT, "--model-head", "%d.%d" % (layer, head), "--no-restore",
            "--check-gl", "--config-dir", tmp + "/c-" + name, "--state-dir", tmp + "/s-" + name, "--capture-dir", caps,
            "--capture-sidecars", "--layout-out", lay, "--state-out", state] + SIZE
    d = g.model_dump(folder, TEXT)
    T = len(d["token_ids"])
    p = g.start(args)
    try:
        g.wait_for_layout(lay, ["model_walk"], proc=p)
        win = g.read_json(lay)
        origin = (win["window_x"], win["window_y"])
        g.focus_window()
        g.wait_state(state, "the model view drawn", lambda j: not j["model"]["busy"] and j["model"]["shown"], p)
        g.click_widget(lay, state, "model_walk", p, origin)
        st = g.wait_state(state, "layer %d in the walkthrough" % layer,
                          lambda j: j["walkthrough"] and j["origin"] == "layer %d of %s" % (layer, base), p)
        m = st["session"]["model"]
        got = {k: m.get(k) for k in want}
        g.check(got == want, "%s: layer %d opens as gqa with the layer's options %s" % (name, layer, got))
        g.check("layer %d of %s" % (layer, base) in st["title"],
                "%s: the title names the layer and the model (%r)" % (name, st["title"]))
        g.check(st["session"]["tokens"] == d["tokens"],
                "%s: the tokens as the tokenizer spells them (%s)" % (name, st["session"]["tokens"][:4]))
        g.check(st["head"] == head and st["walk"]["pos"] == 0,
                "%s: head %d selected, the walkthrough at its first step (%s)" % (name, head, st["walk"]["pos"]))
        g.check(st["gl_errors"] == 0 and st["error"] == "", "%s: no GL error, no compute error (%s)" % (name, st["error"]))
        # The softmax step: the layer's own weights (head 0), as dump computes them.
        g.click_widget(lay, state, "walk_chip_%d" % chip(m, "softmax"), p, origin)
        st = g.wait_state(state, "the softmax step", lambda j: j["walk"]["pos"] == chip(m, "softmax") - 1 and
                          j["walk"]["titles"] and j["walk"]["titles"][0].startswith("attn_weights"), p)
        w = d["tensors"]["layers.%d.attn_weights" % layer]["data"]
        shown = st["walk"]["values"]
        want_cells = ["%.2f" % w[k] for k in range(len(shown))]
        mixed = any(0.01 < float(v) < 0.99 for v in shown)  # a row past the first: weights spread over keys
        g.check(len(shown) == min(16, T * T) and mixed and
                all(abs(float(a) - float(b)) <= 0.006 for a, b in zip(shown, want_cells)),
                "%s: the softmax step shows layer %d's weights (%s; dump %s)" % (name, layer, shown[:6], want_cells[:6]))
        # The mask step, captured with its display list: the window's cells hatched where it has one.
        g.click_widget(lay, state, "walk_chip_%d" % chip(m, "mask"), p, origin)
        g.wait_state(state, "the mask step", lambda j: j["walk"]["pos"] == chip(m, "mask") - 1, p)
        g.wait_frames(state, 2, p)
        g.key("F12")
        st = g.wait_state(state, "the mask step captured", lambda j: j["last_capture"].endswith(".png"), p)
        shot = st["last_capture"]
        if g.check(g.wait_for_file(shot + ".json", proc=p), "%s: F12 saves %s and its display list" % (name, shot)):
            hatched = window_hatches(shot + ".json")
            window = want.get("sliding_window") or 0
            g.check((hatched > 0) == (window > 0), "%s: %d cells hatched outside the window (W = %s)" % (name, hatched, window))
        g.stop(p)
    finally:
        if p.poll() is None:
            g.stop(p)
    out = os.path.join(tmp, name + "-layer.png")
    r = g.run(["render", "--model", folder, "--text", TEXT, "--view", "layer", str(layer), "-o", out])
    g.check(r.returncode == 0 and os.path.getsize(out) > 0,
            "%s: render --view layer %d draws the layer through the lesson's module (%s)" % (name, layer, r.stderr.strip()))


def with_attention_bias(folder):
    """The SmolLM2-style Llama with attention_bias: zero q/k/v/o_proj biases (o_proj's has no place
    in the lesson's gqa module)."""
    path = os.path.join(folder, "model.safetensors")
    header, data = read_raw_safetensors(path)
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    width = config["hidden_size"]
    for layer in range(config["num_hidden_layers"]):
        for p in "qkvo":
            header["model.layers.%d.self_attn.%s_proj.bias" % (layer, p)] = {
                "dtype": "F32", "shape": [width], "data_offsets": [len(data), len(data) + 4 * width]}
            data += bytes(4 * width)
    write_raw_safetensors(path, header, data)
    config["attention_bias"] = True
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    return folder


def check_refused(folder):
    """Where the lesson cannot show the layer's numbers: the reason in the button's place, no
    button in the toolbar, and render --view layer refused in the same words."""
    lay, state = os.path.join(tmp, "bias.layout.json"), os.path.join(tmp, "bias.state.json")
    why = "Llama: o_proj has a bias (attention_bias), which the lesson's gqa out_proj has not"
    p = g.start(["gui", "--model", folder, "--text", TEXT, "--model-head", "0.0", "--no-restore", "--check-gl",
                 "--config-dir", tmp + "/c-bias", "--state-dir", tmp + "/s-bias", "--layout-out", lay,
                 "--state-out", state] + SIZE)
    try:
        g.wait_for_layout(lay, ["model_walk_refused"], proc=p)
        st = g.wait_state(state, "the model view drawn", lambda j: not j["model"]["busy"] and j["model"]["shown"], p)
        g.check(st["model"]["layer_walk_refused"] == why, "attention_bias: the state says why (%r)" %
                st["model"]["layer_walk_refused"])
        widgets = g.read_json(lay)["widgets"]
        g.check("model_walk" not in widgets and "model_view_walk" not in widgets,
                "attention_bias: no Open layer button, its reason in its place")
        g.stop(p)
    finally:
        if p.poll() is None:
            g.stop(p)
    out = os.path.join(tmp, "never.png")
    r = g.run(["render", "--model", folder, "--text", TEXT, "--view", "layer", "0", "-o", out])
    g.check(r.returncode == 2 and why in r.stderr and not os.path.exists(out),
            "attention_bias: render --view layer 0 refused in one line, exit 2 (%s)" % r.stderr.strip())


# Qwen3: 4 query heads sharing 2 K/V heads of 32 (d_out 128 against hidden 64), QK-norm, base 1e6.
check_layer("qwen3_f32", hf_folder(MODERN, "qwen3_f32", os.path.join(tmp, "qwen3_f32")), 1, 2,
            {"variant": "gqa", "num_kv_groups": 2, "qk_norm": True, "rope_base": 1000000.0, "sliding_window": None,
             "out_dim": 64, "query_pre_attn_scalar": None})
# Gemma 3, layer 0: sliding (W = 4), the local base 10000, scores · 24^-0.5.
check_layer("gemma3_f32", hf_folder(MODERN, "gemma3_f32", os.path.join(tmp, "gemma3_f32")), 0, 1,
            {"variant": "gqa", "num_kv_groups": 2, "qk_norm": True, "rope_base": 10000.0, "sliding_window": 4,
             "out_dim": None, "query_pre_attn_scalar": 24.0})

check_refused(with_attention_bias(hf_folder(MODERN, "llama_mha_f32", os.path.join(tmp, "llama_bias"))))

g.finish()
