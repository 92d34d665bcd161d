#!/usr/bin/env python3
"""The walkthrough's steps of the bonus variants as `mhaviz render --view step` draws them: every
step of a grouped-query lesson (6 query heads, 2 K/V heads), of multi-query attention, of
QK-norm and RoPE (on the weight split, fused qkv and gqa), the expansion and the scores with
the `.repeat` mistake, and a sliding window's mask. Each picture
is non-empty and differs from every other; the SVG says what each draws (K/V heads, which query
head reads which, the mis-paired heads outlined, the window's cells hatched apart from the
causal ones), and its numbers are the ones `mhaviz dump` writes.
Usage: test_walk_variants_cli.py MHAVIZ"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "mhaviz"
SVG = "{http://www.w3.org/2000/svg}"
TOKENS = ["Your", "journey", "starts", "with", "one", "step"]


def run(*args):
    return subprocess.run([MHAVIZ, *args], capture_output=True, text=True, timeout=120)


def session(**model):
    m = {"variant": "gqa", "d_out": 12, "num_heads": 6, "num_kv_groups": 2, "context_length": 6, "dropout": 0.0,
         "qkv_bias": False, "causal": True, "seed": 123}
    m.update(model)
    return {"format": "mhaviz-session", "version": 3, "tokens": TOKENS,
            "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33],
                           [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]],
            "batch": 1, "model": {k: v for k, v in m.items() if v is not None}}


class Steps(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, s):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(s, f)
        return path

    def render(self, path, step, ext="png", *extra):
        out = os.path.join(self.tmp.name, "%s-%s%s.%s" % (os.path.basename(path), step, "".join(extra), ext))
        r = run("render", path, "-o", out, "--view", "step", str(step), "--size", "1280x720", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(os.path.getsize(out), 1000, out)
        return out

    def svg(self, path, step, *extra):
        return ET.parse(self.render(path, step, "svg", *extra)).getroot()

    def texts(self, root):
        return ["".join(e.itertext()) for e in root.iter(SVG + "text")]

    def classes(self, root, cls):
        return [e for e in root.iter() if cls in (e.get("class") or "").split()]

    def test_every_step_is_a_distinct_picture(self):
        pictures = {}
        split = dict(variant="weight_split", d_out=4, num_heads=2, num_kv_groups=None)
        for name, s, steps in (("gqa", session(), 13), ("mqa", session(num_kv_groups=1), 13),
                               ("swa", session(sliding_window=3, **split), 12),
                               ("rope", session(rope_base=10000, **split), 13),
                               ("norm-rope", session(qk_norm=True, rope_base=10000, **split), 14),
                               ("gqa-norm-rope", session(qk_norm=True, rope_base=100), 15),
                               ("fused-norm", session(variant="fused_qkv", d_out=4, num_heads=2, num_kv_groups=None,
                                                      qk_norm=True), 14),
                               ("mla", session(variant="mla", num_kv_groups=None, latent_dim=5), 13),
                               ("mla-norm", session(variant="mla", num_kv_groups=None, qk_norm=True), 14)):
            path = self.write(name + ".json", s)
            for k in range(steps):
                pictures["%s %d" % (name, k)] = self.render(path, k)
            r = run("render", path, "-o", os.path.join(self.tmp.name, "x.png"), "--view", "step", str(steps))
            self.assertEqual(r.returncode, 2, "%s has %d steps" % (name, steps))
            if name in ("gqa", "mqa"):
                for k in ("expand", "scores"):
                    pictures["%s %s mistake" % (name, k)] = self.render(path, k, "png", "--mistake")
        digests = {}
        for what, png in pictures.items():
            with open(png, "rb") as f:
                d = hashlib.sha256(f.read()).hexdigest()
            self.assertNotIn(d, digests, "%s draws the same picture as %s" % (what, digests.get(d)))
            digests[d] = what

    def test_gqa_expansion_names_which_query_head_reads_which_kv_head(self):
        path = self.write("gqa.json", session())
        root = self.svg(path, "expand")
        texts = self.texts(root)
        self.assertIn("K/V head 0", texts)
        self.assertIn("K/V head 1", texts)
        for h in range(6):
            self.assertIn("head %d ← kv %d" % (h, h // 3), texts)
        self.assertIn("kv 0: heads 0, 1, 2", texts)
        self.assertEqual(self.classes(root, "wrong"), [])
        # The projection: keys and values at 2 K/V heads beside the 6 heads of the queries.
        texts = self.texts(self.svg(path, "project"))
        self.assertIn("keys  (1, 6, 4)", texts)
        self.assertIn("queries  (1, 6, 12)", texts)
        # The mistake: .repeat pairs heads 1 and 4 (of 0..5) with the other K/V head.
        root = self.svg(path, "expand", "--mistake")
        texts = self.texts(root)
        for h in range(6):
            self.assertIn("head %d ← kv %d" % (h, h % 2), texts)
        self.assertIn("kv 0: heads 0, 2, 4", texts)
        # The keys of heads 1 and 4 (the values, paired alike, are left out beside the correct
        # expansion): 2 heads x 6 tokens x head_dim 2 cells.
        self.assertEqual(len(self.classes(root, "wrong")), 2 * 6 * 2)
        self.assertTrue(any(t.startswith("keys = keys.repeat(1, self.group_size, 1, 1)") for t in texts))

    def test_gqa_mistaken_scores_are_the_mispaired_heads_and_only_theirs(self):
        path = self.write("gqa.json", session())
        out = os.path.join(self.tmp.name, "dump.json")
        r = run("dump", path, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        t = json.load(open(out))["tensors"]
        q, k = t["q"]["data"], t["k"]["data"]  # (1, 6, 6, 2), (1, 2, 6, 2)

        def score(h, g, i, j):
            return sum(q[(h * 6 + i) * 2 + d] * k[(g * 6 + j) * 2 + d] for d in range(2))

        root = self.svg(path, "scores", "--mistake")
        result, last = {}, {}
        for e in self.classes(root, "cell"):
            title = e.find(SVG + "title")
            if title is None:
                continue
            index, value = title.text.split(" = ")
            if (e.get("class") or "").split() == ["cell"]:
                result[index] = float(value)
            last[index] = float(value)  # the correct scores are the grid drawn last
        # The result grid is the mistake's: [0, h, i, j] = q_h · k_(h mod 2) (two decimals); the
        # correct q_h · k_(h / 3) beside it.
        for h in range(6):
            for i in range(6):
                for j in range(6):
                    self.assertAlmostEqual(result["[0, %d, %d, %d]" % (h, i, j)], score(h, h % 2, i, j), delta=0.006)
                    self.assertAlmostEqual(last["[0, %d, %d, %d]" % (h, i, j)], score(h, h // 3, i, j), delta=0.006)
        # Outlined: every cell of heads 1 and 4 whose score changed, no cell of the others.
        self.assertGreater(len(self.classes(root, "wrong")), 36)
        self.assertLessEqual(len(self.classes(root, "wrong")), 2 * 36)

    def test_multi_query_expands_one_kv_head_and_repeat_changes_nothing(self):
        path = self.write("mqa.json", session(num_kv_groups=1))
        for extra in ((), ("--mistake",)):
            root = self.svg(path, "expand", *extra)
            texts = self.texts(root)
            for h in range(6):
                self.assertIn("head %d ← kv 0" % h, texts)
            self.assertIn("kv 0: heads 0, 1, 2, 3, 4, 5", texts)
            self.assertEqual(self.classes(root, "wrong"), [])

    def dump(self, path):
        out = os.path.join(self.tmp.name, "dump.json")
        r = run("dump", path, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.load(open(out))["tensors"]

    def cells(self, root, exact=True):
        """{index: value} of the result grid's cells (exact) or of the last grid drawing each index."""
        out = {}
        for e in self.classes(root, "cell"):
            title = e.find(SVG + "title")
            if title is None or (exact and (e.get("class") or "").split() != ["cell"]):
                continue
            index, value = title.text.split(" = ")
            out[index] = float(value)
        return out

    def test_norm_and_rope_steps_show_the_traces_tensors(self):
        path = self.write("nr.json", session(variant="weight_split", d_out=4, num_heads=2, num_kv_groups=None,
                                             qk_norm=True, rope_base=10000))
        t = self.dump(path)
        for step, name, tensor in (("qk_norm", "q_normed", "q_normed"), ("rope", "q_rotated", "q_rotated")):
            root = self.svg(path, step)
            self.assertTrue(any(x.startswith(name + "  (1, 2, 6, 2)") for x in self.texts(root)), step)
            self.assertTrue(any(x.startswith("k" + name[1:] + "  ") for x in self.texts(root)), step)
            shown, data = self.cells(root), t[tensor]["data"]  # (1, 2, 6, 2)
            self.assertEqual(len(shown), 24, step)
            for h in range(2):
                for i in range(6):
                    for d in range(2):
                        self.assertAlmostEqual(shown["[0, %d, %d, %d]" % (h, i, d)], data[(h * 6 + i) * 2 + d], delta=0.006)
        # Position 0 is not turned; the rotation keeps every pair's length.
        qn, qr = t["q_normed"]["data"], t["q_rotated"]["data"]
        self.assertEqual(qr[:2], qn[:2])
        # The scores: of the rotated q and k (the trace's), and beside them without the rotation.
        root = self.svg(path, "scores")
        texts = self.texts(root)
        self.assertIn("q_rotated  (1, 2, 6, 2)", texts)
        self.assertTrue(any(x.startswith("without RoPE") for x in texts), texts)
        kn = t["k_normed"]["data"]
        result, last = self.cells(root), self.cells(root, exact=False)
        for h in range(2):
            for i in range(6):
                for j in range(6):
                    plain = sum(qn[(h * 6 + i) * 2 + d] * kn[(h * 6 + j) * 2 + d] for d in range(2))
                    idx = "[0, %d, %d, %d]" % (h, i, j)
                    self.assertAlmostEqual(result[idx], t["attn_scores"]["data"][(h * 6 + i) * 6 + j], delta=0.006)
                    self.assertAlmostEqual(last[idx], plain, delta=0.006)

    def test_mla_projects_keys_and_values_from_its_latent(self):
        path = self.write("mla.json", session(variant="mla", num_kv_groups=None, latent_dim=5))
        t = self.dump(path)
        root = self.svg(path, "latent")
        self.assertIn("latent  (1, 6, 5)", self.texts(root))
        shown = self.cells(root)
        self.assertEqual(len(shown), 6 * 5)
        for i in range(6):
            for j in range(5):
                self.assertAlmostEqual(shown["[0, 0, %d, %d]" % (i, j)], t["latent"]["data"][i * 5 + j], delta=0.006)
        # The projection: keys | values (1, 6, 12) up-projected from the latent drawn beside them.
        root = self.svg(path, "project", "--pane", "k")
        texts = self.texts(root)
        self.assertIn("latent  (1, 6, 5)", texts)
        self.assertTrue(any(x.startswith("keys  (1, 6, 12)") for x in texts), texts)
        shown = self.cells(root)
        for i in range(6):
            for j in range(12):
                self.assertAlmostEqual(shown["[0, 0, %d, %d]" % (i, j)], t["keys"]["data"][i * 12 + j], delta=0.006)

    def test_window_mask_is_drawn_apart_from_the_causal_mask(self):
        path = self.write("swa.json", session(variant="weight_split", d_out=4, num_heads=2, num_kv_groups=None,
                                              sliding_window=3))
        root = self.svg(path, "mask")
        # 6 tokens, W = 3: keys i - j >= 3 are (3,0) (4,0) (4,1) (5,0) (5,1) (5,2); 15 causal; 2 heads.
        window = [e for e in root.iter() if (e.get("class") or "") == "cell masked window"]
        causal = [e for e in root.iter() if (e.get("class") or "") == "cell masked"]
        self.assertEqual(len(window), 2 * 6)
        self.assertEqual(len(causal), 2 * 15)
        self.assertEqual(len(self.classes(root, "legend-window")), 1)
        texts = self.texts(root)
        self.assertIn("outside the window: -inf (i − j ≥ W = 3)", texts)
        self.assertTrue(any(t.startswith("mask_bool = (diff < 0) | (diff >= W)") for t in texts))
        # Without the window, no cell is hatched as outside it.
        plain = self.write("plain.json", session(variant="weight_split", d_out=4, num_heads=2, num_kv_groups=None))
        root = self.svg(plain, "mask")
        self.assertEqual([e for e in root.iter() if (e.get("class") or "") == "cell masked window"], [])
        self.assertEqual(len(self.classes(root, "legend-window")), 0)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
