#!/usr/bin/env python3
"""`mhaviz dump --model` and `bench --model` as a user runs them, on the checkpoints that
tests/models/make_checkpoints.py writes with torch (each with torch's own outputs):

    test_gpt_cli.py MHAVIZ MODELS_DIR

Every good checkpoint's dump equals torch's attention weights and last logits; --text goes
through the checkpoint's tokenizer; every broken checkpoint is one line on stderr naming the
problem, exit status 2, and no output file; bench prints its closing line."""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "mhaviz"
MODELS = sys.argv[2] if len(sys.argv) > 2 else "build/dev/models"


def run(*args):
    return subprocess.run([MHAVIZ, *args], capture_output=True, text=True, errors="replace", timeout=120)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_safetensors(path):
    """{name: (shape, [floats])} of an F32 safetensors file, with the standard library only."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name != "__metadata__":
            b, e = t["data_offsets"]
            out[name] = (t["shape"], list(struct.unpack(f"<{(e - b) // 4}f", data[b:e])))
    return out


def max_diff(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b))


class Dump(unittest.TestCase):
    def test_every_checkpoint_equals_torch(self):
        manifest = load(os.path.join(MODELS, "manifest.json"))
        self.assertGreaterEqual(len(manifest["checkpoints"]), 7)
        for c in manifest["checkpoints"]:
            folder = os.path.join(MODELS, c["name"])
            ids = load(os.path.join(folder, "reference", "input.json"))["token_ids"]
            r = run("dump", "--model", folder, "--ids", ",".join(map(str, ids)))
            self.assertEqual(r.returncode, 0, f"{c['name']}: {r.stderr}")
            d = json.loads(r.stdout)
            want = read_safetensors(os.path.join(folder, "reference", "expected.safetensors"))
            self.assertEqual(d["format"], "mhaviz-gpt-dump")
            self.assertEqual(d["token_ids"], ids)
            self.assertEqual(len(d["tokens"]), len(ids))
            for layer in range(c["L"]):
                name = f"layers.{layer}.attn_weights"
                self.assertEqual(d["tensors"][name]["shape"], [1, c["H"], len(ids), len(ids)], name)
                self.assertEqual(d["tensors"][name]["shape"], want[name][0], name)
                self.assertLess(max_diff(d["tensors"][name]["data"], want[name][1]), 2e-6, f"{c['name']} {name}")
            last = want["logits_last"][1]
            self.assertEqual(d["tensors"]["logits_last"]["shape"], [c["vocab_size"]])
            self.assertLess(max_diff(d["tensors"]["logits_last"]["data"], last), 1e-5 * max(1, max(map(abs, last))))
            # The top next tokens are the largest logits, most probable first.
            top = d["next_token"]["top"]
            self.assertEqual(len(top), 5)
            best = sorted(range(len(last)), key=lambda i: (-last[i], i))[:5]
            self.assertEqual([t["id"] for t in top], best, c["name"])
            self.assertEqual([t["p"] for t in top], sorted([t["p"] for t in top], reverse=True))

    def test_text_goes_through_the_tokenizer(self):
        folder = os.path.join(MODELS, "hf_f32")
        r = run("dump", "--model", folder, "--text", "the thin hat")
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        # The tiny vocabulary's merges: "h e", "Ġ t", "i n" apply; "Ġ a" needs adjacent letters.
        self.assertEqual(d["tokens"], ["t", "he", "\u2423t", "h", "in", "\u2423", "h", "a", "t"])
        by_ids = json.loads(run("dump", "--model", folder, "--ids", ",".join(map(str, d["token_ids"]))).stdout)
        self.assertEqual(by_ids["tensors"], d["tensors"])
        eot = json.loads(run("dump", "--model", folder, "--text", "the", "--prepend-eot").stdout)
        self.assertEqual(eot["token_ids"][0], 262)
        self.assertEqual(eot["tokens"][0], "<|endoftext|>")
        # A path to the .safetensors file finds the config and tokenizer beside it.
        by_file = json.loads(run("dump", "--model", os.path.join(folder, "model.safetensors"), "--text", "the thin hat").stdout)
        self.assertEqual(by_file["tensors"], d["tensors"])

    def test_output_file_is_the_same_json(self):
        folder = os.path.join(MODELS, "book_qkv_bias")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "d.json")
            r = run("dump", "--model", folder, "--ids", "1,2,3", "-o", out)
            self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
            self.assertEqual(load(out), json.loads(run("dump", "--model", folder, "--ids", "1,2,3").stdout))
            self.assertEqual(os.listdir(tmp), ["d.json"])  # no temporary file left


class BadInput(unittest.TestCase):
    def expect_error(self, args, needle):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            with open(out, "w") as f:
                f.write("earlier")
            r = run(*args, "-o", out)
            self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
            lines = r.stderr.splitlines()
            self.assertEqual(len(lines), 1, f"{args}: {r.stderr!r}")
            self.assertTrue(lines[0].startswith("mhaviz: "), lines[0])
            self.assertIn(needle, lines[0], args)
            self.assertEqual(r.stdout, "")
            with open(out) as f:
                self.assertEqual(f.read(), "earlier", f"{args}: the old output was touched")
            self.assertEqual(os.listdir(tmp), ["out.json"], args)

    def test_every_broken_checkpoint(self):
        bad = os.path.join(MODELS, "bad")
        cases = load(os.path.join(bad, "manifest.json"))["cases"]
        self.assertGreaterEqual(len(cases), 17)
        for c in cases:
            with self.subTest(c["name"]):
                self.expect_error(["dump", "--model", os.path.join(bad, c["path"]), "--ids", "1,2"], c["error"])

    def test_input_errors(self):
        folder = os.path.join(MODELS, "hf_f32")
        self.expect_error(["dump", "--model", folder, "--text", "x" * 20],
                          "text: 20 tokens is longer than the model's context of 16")
        self.expect_error(["dump", "--model", folder, "--ids", "1,263"], "--ids: token 1 is id 263, outside the model's vocabulary [0, 263)")
        self.expect_error(["dump", "--model", folder, "--text", ""], "text: empty")
        self.expect_error(["dump", "--model", folder], "--text: give the text")
        self.expect_error(["dump", "--model", folder, "--text", "a", "--ids", "1"], "not both")
        self.expect_error(["dump", "seed003-wrapper", "--model", folder, "--ids", "1"], "session: give a SESSION or --model, not both")
        self.expect_error(["dump", "seed003-wrapper", "--text", "a"], "need --model")
        self.expect_error(["dump", "--model", os.path.join(MODELS, "no-such-model"), "--ids", "1"], "does not exist")


class Render(unittest.TestCase):
    """render --model against dump: the cells drawn hold the weights dump writes."""
    TEXT = "the thin hat in the hat"

    def weights(self, folder):
        d = json.loads(run("dump", "--model", folder, "--text", self.TEXT).stdout)
        return d["tensors"], len(d["token_ids"])

    def render(self, folder, *view, extra=()):
        with tempfile.TemporaryDirectory() as tmp:
            out, cells = os.path.join(tmp, "f.png"), os.path.join(tmp, "f.json")
            r = run("render", "--model", folder, "--text", self.TEXT, "--view", *view, "-o", out, "--cells-json", cells, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            return load(cells)

    def expect_head(self, drawn, want, T, label):
        self.assertEqual((drawn["rows"], drawn["cols"]), (T, T), label)
        for i in range(T):
            for j in range(T):
                v = drawn["values"][i * T + j]
                if j > i:  # masked: drawn hatched (no value) or as its weight, 0
                    self.assertIn(v, (None, 0.0), f"{label} [{i}, {j}]")
                else:
                    self.assertAlmostEqual(v, want[i * T + j], places=6, msg=f"{label} [{i}, {j}]")

    def test_model_layer_and_head_views_show_dumps_weights(self):
        folder = os.path.join(MODELS, "hf_untied")  # 3 layers, 4 heads
        tensors, T = self.weights(folder)
        model = self.render(folder, "model", extra=("--linear-scale",))
        self.assertEqual(len(model["heads"]), 3 * 4)
        for layer in range(3):
            w = tensors[f"layers.{layer}.attn_weights"]["data"]
            for h in range(4):
                self.expect_head(model["heads"][layer * 4 + h], w[h * T * T:(h + 1) * T * T], T, f"model view {layer}.{h}")
        w1 = tensors["layers.1.attn_weights"]["data"]
        layer = self.render(folder, "layer", "1")
        self.assertEqual(len(layer["heads"]), 4)
        for h in range(4):
            self.expect_head(layer["heads"][h], w1[h * T * T:(h + 1) * T * T], T, f"layer view 1.{h}")
        head = self.render(folder, "head", "1.2")
        self.assertEqual(len(head["heads"]), 1)
        self.expect_head(head["heads"][0], w1[2 * T * T:3 * T * T], T, "head view 1.2")
        # --view model L.H: the grid, then that head large from the trace's own weights.
        selected = self.render(folder, "model", "1.2", extra=("--size", "1500x850", "--font", "18", "--no-caption"))
        self.assertEqual(len(selected["heads"]), 3 * 4 + 1)
        self.expect_head(selected["heads"][-1], w1[2 * T * T:3 * T * T], T, "model view, head 1.2 large")
        self.assertGreater(selected["heads"][-1]["x0"], selected["heads"][3]["x1"])  # beside the grid
        self.assertLessEqual(selected["logical_width"], 1500)
        self.assertLessEqual(selected["logical_height"], 850)

    def test_detectors_and_errors(self):
        folder = os.path.join(MODELS, "hf_f32")
        for detector in ("previous-token", "first-token", "duplicate-token", "induction"):
            drawn = self.render(folder, "model", extra=("--detector", detector))
            self.assertEqual(len(drawn["heads"]), 2 * 4, detector)
        induction = self.render(folder, "model", extra=("--detector", "induction"))
        self.assertEqual(induction["heads"][0]["rows"], 15)  # <|endoftext|> + 7 random ids twice: the context is 16
        for view, needle in [(["layer", "2"], "--view: layer 2 is out of range [0, 1]"),
                             (["head", "1.4"], "--view: head 1.4 is out of range (heads 0 to 3)"),
                             (["head", "1"], "is not LAYER.HEAD"),
                             (["model", "1.4"], "--view: head 1.4 is out of range (heads 0 to 3)"),
                             (["model", "x"], "--view: model takes a head L.H (e.g. 5.1), got 'x'"),
                             (["layer"], "--view: layer needs a layer"),
                             (["grid"], "--view: 'grid' is not one of model, layer L, head L.H, sweep, patch, lens (with --model)")]:
            with tempfile.TemporaryDirectory() as tmp:
                r = run("render", "--model", folder, "--text", "the", "--view", *view, "-o", os.path.join(tmp, "x.png"))
                self.assertEqual(r.returncode, 2, view)
                self.assertIn(needle, r.stderr, view)
                self.assertEqual(os.listdir(tmp), [])
        with tempfile.TemporaryDirectory() as tmp:
            r = run("render", "--model", folder, "--text", "the", "--view", "model", "--detector", "nonsense", "-o", os.path.join(tmp, "x.png"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("--detector: 'nonsense' is not one of", r.stderr)
            r = run("render", "seed003-wrapper", "--detector", "induction", "-o", os.path.join(tmp, "x.png"))
            self.assertEqual(r.returncode, 2)
            self.assertEqual(os.listdir(tmp), [])


class Bench(unittest.TestCase):
    def test_full_and_edit(self):
        folder = os.path.join(MODELS, "hf_untied")
        for extra in ([], ["--edit-at", "15"], ["--backend", "openblas"]):
            r = run("bench", "--model", folder, "--tokens", "16", "--repeat", "3", *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            # An edit is set beside one read of the weights it reads whole (the scripts print
            # edit / read-once from the last field).
            edit = "--edit-at" in extra
            self.assertRegex(r.stdout.splitlines()[-1], r"^median_ms=[0-9.]+ gflops=[0-9.]+ peak_rss_mib=[0-9.]+"
                             + (r" read_once_ms=[0-9.]+$" if edit else "$"))
            self.assertEqual("reading every weight once" in r.stdout, edit)
            self.assertIn("3 layers", r.stdout)
        self.assertIn("rows 15 to 15", run("bench", "--model", folder, "--tokens", "16", "--repeat", "3", "--edit-at", "15").stdout)

    def test_errors(self):
        folder = os.path.join(MODELS, "hf_untied")
        for args, needle in [(["--tokens", "17"], "--tokens: 17 is out of range [1, 16]"),
                             (["--tokens", "8", "--edit-at", "8"], "--edit-at: 8 is out of range [0, 7]")]:
            r = run("bench", "--model", folder, "--repeat", "1", *args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(needle, r.stderr)
        r = run("bench", "--edit-at", "3")
        self.assertEqual((r.returncode, r.stderr.strip()), (2, "mhaviz: --edit-at: needs --model"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
