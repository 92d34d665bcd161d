#!/usr/bin/env python3
"""`mhaviz dump --ablate`, `mhaviz patch` and `mhaviz lens` as a user runs them, on the
checkpoints tests/models/make_interventions.py (GPT-2 layout, the book's GPTModel) or
make_hf_interventions.py (Qwen3, Gemma 3, Qwen2, Llama) writes with a hooked torch forward:

    test_interv_cli.py MHAVIZ INTERVENTIONS_DIR

An ablated dump and the lens equal torch's; the patching grids have the shapes and the
values no reference is needed for (1 where the whole answer is patched, 0 before the
changed token); bad input is one line naming the option and the value, exit status 2 and
no output file."""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_gpt_cli import max_diff, read_safetensors  # noqa: E402

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "mhaviz"
DIR = sys.argv[2] if len(sys.argv) > 2 else "build/dev/models/interventions"
# Byte-level texts of the tiny vocabulary: one token per character here, the same length.
CLEAN, CORRUPT = "abcdefgh", "abcdxfgh"


def run(*args):
    return subprocess.run([MHAVIZ, *args], capture_output=True, text=True, errors="replace", timeout=120)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


MANIFEST = load(os.path.join(DIR, "manifest.json"))
# make_hf_interventions.py's Qwen3, Gemma 3, Qwen2 and Llama folders have no tokenizer: their texts
# are ids written as numbers, one token each (the 10 ids of the manifest, the 9th changed).
HF = all("model_type" in c for c in MANIFEST["checkpoints"])
if HF:
    CLEAN, CORRUPT = " ".join(map(str, MANIFEST["clean"])), " ".join(map(str, MANIFEST["corrupt"]))
    CLEAN_TOKENS, CHANGED = [str(i) for i in MANIFEST["clean"]], 8
    TARGET, VS, RANKED = str(MANIFEST["target"]), str(MANIFEST["vs"]), "5"
    TWO, THREE, TOO_LONG = "5 6", "5 6 7", " ".join(["5"] * 129)
    # float32 against a float64 reference (make_interventions.py's is float32 torch).
    WEIGHTS_TOL = 1e-5
else:
    CLEAN_TOKENS, CHANGED = list(CLEAN), 4
    TARGET, VS, RANKED = "i", "j", "a"
    TWO, THREE, TOO_LONG = "ij", "abc", "x" * 40
    WEIGHTS_TOL = 2e-6
LONGER = CORRUPT + (" 5" if HF else "x")
N = len(CLEAN_TOKENS)


def folders():
    return [(c["name"], os.path.join(DIR, c["name"])) for c in MANIFEST["checkpoints"]]


def ids_arg(ids):
    return ",".join(map(str, ids))


class Ablate(unittest.TestCase):
    def test_ablated_dump_equals_torch(self):
        for name, folder in folders():
            ref = read_safetensors(os.path.join(folder, "reference", "interventions.safetensors"))
            for n, a in enumerate(MANIFEST["ablations"]):
                spec = ",".join(f"{l}.{h}" for l, h in a["heads"]) + ":" + a["mode"]
                r = run("dump", "--model", folder, "--ids", ids_arg(MANIFEST["clean"]), "--ablate", spec)
                self.assertEqual(r.returncode, 0, f"{name} {spec}: {r.stderr}")
                d = json.loads(r.stdout)
                self.assertEqual(d["ablation"], {"heads": [f"{l}.{h}" for l, h in a["heads"]], "mode": a["mode"]})
                shape, want = ref[f"ablate{n}.weights"]
                got = [x for layer in range(shape[0]) for x in d["tensors"][f"layers.{layer}.attn_weights"]["data"]]
                self.assertLess(max_diff(got, want), WEIGHTS_TOL, f"{name} {spec}")
                shape, logits = ref[f"ablate{n}.logits"]
                last = logits[-shape[1]:]
                scale = max(1.0, max(abs(x) for x in last))
                self.assertLess(max_diff(d["tensors"]["logits_last"]["data"], last), 1e-5 * scale, f"{name} {spec}")

    def test_bad_ablations_are_one_line_exit_2_no_file(self):
        _, folder = folders()[0]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            for spec, part in (("9.0", "ablate: head 9.0"), ("0.7", "ablate: head 0.7"), ("1", "ablate: \"1\""),
                               ("0.1:avg", "mode \"avg\"")):
                r = run("dump", "--model", folder, "--text", CLEAN, "--ablate", spec, "-o", out)
                self.assertEqual(r.returncode, 2, spec)
                self.assertIn(part, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(out))


class Patch(unittest.TestCase):
    def test_grids_per_head_and_per_layer_position(self):
        for name, folder in folders():
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "grid.json")
                r = run("patch", "--model", folder, "--clean", CLEAN, "--corrupt", CORRUPT, "--target", TARGET,
                        "--vs", VS, "--per", "layer-position", "-o", out)
                self.assertEqual(r.returncode, 0, f"{name}: {r.stderr}")
                g = load(out)
                n_layer, T = g["model"]["n_layer"], N
                self.assertEqual((g["rows"], g["cols"], g["metric"], g["per"]), (n_layer, T, "logit_diff", "layer-position"))
                self.assertEqual(g["clean"]["tokens"], CLEAN_TOKENS)
                self.assertEqual(g["effect"][-1][-1], 1.0, name)  # the last residual is the whole answer
                for layer in range(n_layer):
                    self.assertEqual(g["effect"][layer][:CHANGED], [0.0] * CHANGED, name)  # before the changed token
                if HF:  # the grid is torch's (make_hf_interventions.py's patch_resid)
                    ref = read_safetensors(os.path.join(folder, "reference", "interventions.safetensors"))
                    got = [x for row in g["effect"] for x in row]
                    self.assertLess(max_diff(got, ref["patch_resid"][1]), 1e-4, name)
                r = run("patch", "--model", folder, "--clean", CLEAN, "--corrupt", CORRUPT, "--target", TARGET)
                self.assertEqual(r.returncode, 0, f"{name}: {r.stderr}")
                g = json.loads(r.stdout)
                self.assertEqual((g["rows"], g["cols"], g["metric"]), (n_layer, g["model"]["n_head"], "log_prob"))
                self.assertTrue(all(math.isfinite(x) for row in g["effect"] for x in row))

    def test_bad_input_is_one_line_exit_2_no_file(self):
        _, folder = folders()[0]
        cases = [
            (["--clean", CLEAN, "--corrupt", LONGER, "--target", TARGET],
             f"--corrupt: {N + 1} tokens, the clean text has {N}"),
            (["--clean", CLEAN, "--corrupt", CORRUPT, "--target", TWO], f"--target: '{TWO}' is 2 tokens"),
            (["--clean", CLEAN, "--corrupt", CORRUPT, "--target", TARGET, "--vs", TWO], f"--vs: '{TWO}' is 2 tokens"),
            (["--clean", CLEAN, "--corrupt", CORRUPT, "--target", TARGET, "--per", "cell"], "--per: 'cell'"),
            (["--clean", CLEAN, "--corrupt", CLEAN, "--target", TARGET], "nothing to restore"),
            (["--clean", TOO_LONG, "--corrupt", TOO_LONG, "--target", TARGET], "--clean:"),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "grid.json")
            for args, part in cases:
                r = run("patch", "--model", folder, *args, "-o", out)
                self.assertEqual(r.returncode, 2, args)
                self.assertIn(part, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(out))
            r = run("patch", "--model", os.path.join(tmp, "nothing"), "--clean", CLEAN, "--corrupt", CORRUPT,
                    "--target", TARGET, "-o", out)
            self.assertEqual(r.returncode, 2)
            self.assertFalse(os.path.exists(out))


class Lens(unittest.TestCase):
    def test_every_entry_equals_torch_and_the_last_layer_the_dump(self):
        for name, folder in folders():
            ref = read_safetensors(os.path.join(folder, "reference", "interventions.safetensors"))
            (L, T, V), lens = ref["clean.lens"]
            r = run("lens", "--model", folder, "--ids", ids_arg(MANIFEST["clean"]), "--top", "3", "--target", RANKED)
            self.assertEqual(r.returncode, 0, f"{name}: {r.stderr}")
            d = json.loads(r.stdout)
            self.assertEqual((len(d["layers"]), d["k"], d["target"]["token"]), (L, 3, RANKED))
            for layer in d["layers"]:
                for e in layer["positions"]:
                    row = lens[(layer["layer"] * T + e["position"]) * V:][:V]
                    mx = max(row)
                    z = sum(math.exp(x - mx) for x in row)
                    for t in e["top"]:
                        self.assertAlmostEqual(t["p"], math.exp(row[t["id"]] - mx) / z, delta=1e-5)
                    self.assertEqual(e["target_rank"], sum(x > row[d["target"]["id"]] for x in row))
            dump = json.loads(run("dump", "--model", folder, "--ids", ids_arg(MANIFEST["clean"])).stdout)
            last = d["layers"][-1]["positions"][-1]["top"]
            self.assertEqual(last, dump["next_token"]["top"][:3], name)

    def test_bad_input(self):
        _, folder = folders()[0]
        for args, part in ((["--text", CLEAN, "--top", "0"], "--top: 0"),
                           (["--text", CLEAN, "--target", THREE], f"--target: '{THREE}' is 3 tokens"),
                           (["--top", "3"], "--text")):
            r = run("lens", "--model", folder, *args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(part, r.stderr)
            self.assertEqual(r.stdout, "")


class Render(unittest.TestCase):
    """The figures through render: a PNG whose cells are the grid's values (--cells-json)."""

    def render(self, tmp, *args):
        out, cells = os.path.join(tmp, "f.png"), os.path.join(tmp, "f.json")
        r = run("render", "--model", folders()[0][1], "--text", CLEAN, *args, "-o", out, "--cells-json", cells)
        self.assertEqual(r.returncode, 0, f"{args}: {r.stderr}")
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        return load(cells)["heads"]

    def test_sweep_patch_and_lens_figures_hold_the_grids(self):
        folder = folders()[0][1]
        with tempfile.TemporaryDirectory() as tmp:
            patch = json.loads(run("patch", "--model", folder, "--clean", CLEAN, "--corrupt", CORRUPT, "--target",
                                   TARGET, "--vs", VS, "--per", "layer-position").stdout)
            (h,) = self.render(tmp, "--view", "patch", "--corrupt", CORRUPT, "--target", TARGET, "--vs", VS,
                               "--per", "layer-position")
            self.assertEqual((h["rows"], h["cols"]), (patch["rows"], patch["cols"]))
            self.assertLess(max_diff(h["values"], [x for row in patch["effect"] for x in row]), 1e-6)
            (h,) = self.render(tmp, "--view", "sweep", "--target", TARGET)
            self.assertEqual((h["rows"], h["cols"]), (patch["rows"], patch["model"]["n_head"]))
            if HF:  # the grid is torch's
                ref = read_safetensors(os.path.join(folder, "reference", "interventions.safetensors"))
                self.assertLess(max_diff(h["values"], ref["sweep"][1]), 1e-4)
            lens = json.loads(run("lens", "--model", folder, "--text", CLEAN, "--top", "1").stdout)
            (h,) = self.render(tmp, "--view", "lens")
            want = [layer["positions"][t]["top"][0]["p"] for layer in lens["layers"] for t in range(N)]
            self.assertLess(max_diff(h["values"], want), 1e-6)
            heatmaps = self.render(tmp, "--view", "model", "--norm-weighted")
            self.assertEqual(len(heatmaps), patch["rows"] * patch["model"]["n_head"])

    def test_bad_render_input(self):
        folder = folders()[0][1]
        for args, part in ((["--view", "sweep"], "--target"), (["--view", "patch", "--target", TARGET], "--corrupt"),
                           (["--view", "sweep", "--target", TARGET, "--ablation", "half"], "--ablation: 'half'"),
                           (["--view", "lens", "--corrupt", "x"], "--corrupt: only with --view patch"),
                           (["--view", "head", "0.0", "--norm-weighted"], "--norm-weighted")):
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "f.png")
                r = run("render", "--model", folder, "--text", CLEAN, *args, "-o", out)
                self.assertEqual(r.returncode, 2, args)
                self.assertIn(part, r.stderr)
                self.assertFalse(os.path.exists(out))


class Bench(unittest.TestCase):
    def test_sweep_is_timed_against_a_forward(self):
        folder = folders()[0][1]
        r = run("bench", "--model", folder, "--tokens", "8", "--sweep", "--repeat", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ablation sweep over 12 heads: 2 runs", r.stdout)  # 3 layers × 4 heads both
        self.assertRegex(r.stdout, r"sweep_median_ms=[0-9.]+ forward_median_ms=[0-9.]+")
        for args, part in ((["--sweep", "--edit-at", "1"], "--sweep: not with --edit-at"), ([], "--sweep: needs --model")):
            r = run("bench", *(["--model", folder] if args else []), "--sweep", *args[1:])
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(part, r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
