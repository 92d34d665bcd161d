#!/usr/bin/env python3
"""The book's bonus variants on the command line: `mhaviz kv-memory` against the figures the
book's memory estimators print (ch04/04_gqa, 05_mla, 06_swa memory_estimator_*.py, run by
hand with the same arguments), `dump` of gqa, mla and windowed sessions, every refusal (exit
2, one line, no output), and a man page that documents every subcommand.
Usage: test_variants_cli.py MHAVIZ TEST_DATA_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "mhaviz"
DATA = sys.argv[2] if len(sys.argv) > 2 else "tests/data"
MAN = os.path.join(os.path.dirname(os.path.abspath(DATA)), "..", "doc", "mhaviz.1")


def run(*args):
    return subprocess.run([MHAVIZ, *args], capture_output=True, text=True, timeout=120)


def figures(stdout):
    """{variant: bytes} from the last line, `mha_bytes=... gqa_bytes=...`."""
    last = stdout.strip().splitlines()[-1]
    return {k[:-len("_bytes")]: int(v) for k, v in (kv.split("=") for kv in last.split())}


class KvMemory(unittest.TestCase):
    def gb(self, stdout, row):
        line = next(l for l in stdout.splitlines() if l.startswith(row + " "))
        return re.search(r"(\d+\.\d\d) GB", line).group(1)

    def test_book_gqa_example(self):
        # memory_estimator_gqa.py --emb_dim 4096 --n_heads 32 --n_layers 32 --n_kv_groups 4
        #   --context_length 32768 --dtype bf16: MHA 17.18 GB, GQA 4.29 GB (its n_kv_groups is the group size)
        r = run("kv-memory", "--emb-dim", "4096", "--heads", "32", "--kv-heads", "8", "--layers", "32", "--context",
                "32768", "--dtype", "bf16")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.gb(r.stdout, "MHA"), "17.18")
        self.assertEqual(self.gb(r.stdout, "GQA"), "4.29")
        self.assertEqual(figures(r.stdout), {"mha": 17179869184, "gqa": 4294967296})
        self.assertIn("4.00x", r.stdout)

    def test_book_mla_example(self):
        # memory_estimator_mla.py --emb_dim 2048 --n_heads 24 --n_layers 48 --n_kv_groups 4 --latent_dim 1024
        #   --context_length 8192 --dtype bf16: MHA 3.25 GB, GQA 0.81 GB, MLA 0.81 GB, MHA / MLA 4.03x
        r = run("kv-memory", "--emb-dim", "2048", "--heads", "24", "--kv-heads", "6", "--layers", "48",
                "--latent-dim", "1024", "--context", "8192")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([self.gb(r.stdout, v) for v in ("MHA", "GQA", "MLA")], ["3.25", "0.81", "0.81"])
        self.assertEqual(figures(r.stdout)["mla"], 8192 * 48 * 1024 * 2)
        self.assertIn("4.03x", r.stdout)

    def test_book_swa_example(self):
        # memory_estimator_swa.py --emb_dim 4096 --n_heads 32 --n_layers 32 --n_kv_groups 4
        #   --sliding_window_size 1024 --swa_ratio 5:1 --context_length 32768 --dtype bf16:
        #   MHA + SWA 3.14 GB, GQA + SWA 0.78 GB
        r = run("kv-memory", "--emb-dim", "4096", "--heads", "32", "--kv-heads", "8", "--layers", "32", "--window",
                "1024", "--sliding-every", "6", "--context", "32768")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.gb(r.stdout, "MHA + SWA"), "3.14")
        self.assertEqual(self.gb(r.stdout, "GQA + SWA"), "0.78")
        # 27 sliding layers of 1024 tokens and 5 full ones of 32768, at 8 K/V heads of 128, 2 bytes
        self.assertEqual(figures(r.stdout)["gqa_swa"], (27 * 1024 + 5 * 32768) * 128 * 8 * 2 * 2)

    def test_presets(self):
        r = run("kv-memory", "--preset", "gemma3-270m")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("window 512 on 15 of 18 layers", r.stdout)
        self.assertEqual(figures(r.stdout)["gqa_swa"], (15 * 512 + 3 * 32768) * 256 * 1 * 2 * 2)
        r = run("kv-memory", "--preset", "deepseek-v3", "--context", "1000", "--dtype", "fp32")
        self.assertEqual(figures(r.stdout)["mla"], 1000 * 61 * 576 * 4)
        for name in ("gpt2-small", "gpt2-xl", "llama3.2-1b", "qwen3-0.6b"):
            self.assertEqual(run("kv-memory", "--preset", name).returncode, 0, name)
        # GPT-2 small: 12 layers of 12 heads of 64 at 1024 tokens
        self.assertEqual(figures(run("kv-memory", "--preset", "gpt2-small", "--dtype", "fp32").stdout)["mha"],
                         1024 * 64 * 12 * 2 * 4 * 12)

    def test_plot(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "gemma.svg")
            r = run("kv-memory", "--preset", "gemma3-270m", "--plot", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                svg = f.read()
            # Every row of the table, ending at its figure (GB as the table prints them).
            for row in ("MHA 2.42 GB", "GQA 0.60 GB", "MHA + SWA 0.43 GB", "GQA + SWA 0.11 GB"):
                self.assertIn(row, svg)
            bad = os.path.join(tmp, "gemma.jpg")
            r = run("kv-memory", "--preset", "gemma3-270m", "--plot", bad)
            self.assertEqual(r.returncode, 2)
            self.assertFalse(os.path.exists(bad))
            self.assertTrue(r.stderr.startswith("mhaviz: --plot: '"), r.stderr)
            self.assertEqual(r.stdout, "")

    def test_session(self):
        r = run("kv-memory", "--session", "seed003-weight-split-6d", "--dtype", "fp32")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 layers", r.stdout)

    def test_refusals(self):
        cases = [
            (["--emb-dim", "4096", "--heads", "32", "--kv-heads", "5", "--layers", "2"], "--kv-heads: 5 does not divide"),
            (["--preset", "llama9"], "--preset: 'llama9'"),
            (["--heads", "4", "--layers", "2"], "--emb-dim: missing"),
            (["--emb-dim", "8", "--heads", "2", "--layers", "1", "--dtype", "int4"], "--dtype: 'int4'"),
            (["--emb-dim", "8", "--heads", "2", "--layers", "1", "--sliding-every", "3"], "--sliding-every: 3 needs"),
            (["--emb-dim", "8", "--heads", "2", "--layers", "0"], "--layers: 0"),
            (["--emb-dim", "8", "--heads", "2", "--layers", "1", "--window", "-4"], "--window: -4"),
            (["--preset", "gpt2-xl", "--session", "seed003-wrapper"], "--preset: give"),
            (["--emb-dim", "4096", "--heads", "32", "--layers", "100000", "--context", "1000000000000"], "--layers:"),
        ]
        for args, start in cases:
            r = run("kv-memory", *args)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(r.stdout, "", args)
            self.assertTrue(r.stderr.startswith("mhaviz: " + start), r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


def session(variant, **model):
    m = {"variant": variant, "d_out": 6, "num_heads": 3, "context_length": 6, "dropout": 0.1, "qkv_bias": True,
         "causal": True, "seed": 5}
    m.update(model)
    return {"format": "mhaviz-session", "version": 3, "tokens": ["a", "b", "c", "d", "e"],
            "embeddings": [[0.1 * i, -0.2, 0.3 + i / 7] for i in range(5)], "batch": 2, "model": m}


class Dump(unittest.TestCase):
    def dump(self, s):
        with tempfile.TemporaryDirectory() as tmp:
            path, out = os.path.join(tmp, "s.json"), os.path.join(tmp, "out.json")
            with open(path, "w") as f:
                json.dump(s, f)
            r = run("dump", path, "-o", out)
            written = os.path.exists(out)
            return r, (json.load(open(out)) if written else None)

    def test_variants_name_their_tensors(self):
        r, d = self.dump(session("gqa", num_kv_groups=1, sliding_window=2))
        self.assertEqual(r.returncode, 0, r.stderr)
        t = d["tensors"]
        self.assertEqual(t["k"]["shape"], [2, 1, 5, 2])
        self.assertEqual(t["k_expanded"]["shape"], [2, 3, 5, 2])
        self.assertEqual(d["session"]["version"], 3)
        self.assertEqual(d["session"]["model"]["sliding_window"], 2)
        self.assertNotIn("out_proj.bias", t)
        w = t["attn_weights"]["data"]
        self.assertEqual(w[4 * 5 + 0], 0.0)  # query 4 does not see key 0 through a window of 2
        r, d = self.dump(session("mla", latent_dim=4))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(d["tensors"]["latent"]["shape"], [2, 5, 4])
        self.assertEqual(d["tensors"]["W_UK.weight"]["shape"], [6, 4])

    def test_qk_norm_and_rope_name_their_tensors(self):
        r, d = self.dump(session("gqa", d_out=12, num_kv_groups=1, qk_norm=True, rope_base=100.0))
        self.assertEqual(r.returncode, 0, r.stderr)
        t = d["tensors"]
        for name in ("q_normed", "q_rotated"):
            self.assertEqual(t[name]["shape"], [2, 3, 5, 4], name)
        for name in ("k_normed", "k_rotated"):
            self.assertEqual(t[name]["shape"], [2, 1, 5, 4], name)
        self.assertEqual(t["q_norm.scale"]["data"], [1.0] * 4)
        self.assertEqual(d["session"]["model"]["rope_base"], 100.0)
        self.assertTrue(d["session"]["model"]["qk_norm"])
        # Position 0 is not rotated; every later one is.
        q, qr = t["q_normed"]["data"], t["q_rotated"]["data"]
        self.assertEqual(qr[:4], q[:4])
        self.assertNotEqual(qr[4:8], q[4:8])
        # The expanded keys are the rotated ones, repeated.
        self.assertEqual(t["k_expanded"]["data"][:20], t["k_rotated"]["data"][:20])

    def test_render_draws_steps_of_the_variant_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            for variant, code in (("mla", 0), ("weight_split", 2)):
                path, out = os.path.join(tmp, variant + ".json"), os.path.join(tmp, variant + ".png")
                with open(path, "w") as f:
                    json.dump(session(variant, d_out=12), f)
                r = run("render", path, "-o", out, "--view", "step", "latent")
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertEqual(os.path.exists(out), code == 0)
            self.assertTrue(r.stderr.startswith("mhaviz: --step: 'latent' is not a step of this variant"), r.stderr)
            r = run("render", path, "-o", out, "--view", "grid")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(os.path.getsize(out) > 0)

    def test_bad_combinations_write_nothing(self):
        cases = [
            (session("gqa", num_kv_groups=2), "model.num_kv_groups: 2 does not divide"),
            (session("weight_split", sliding_window=2, causal=False), "model.sliding_window: 2 needs model.causal"),
            (session("weight_split", sliding_window=0), "model.sliding_window: 0"),
            (session("mla", latent_dim=0), "model.latent_dim: 0"),
            (session("mla", d_out=12, rope_base=10000), "model.rope_base: 10000 is set but model.variant = \"mla\""),
            (session("weight_split", d_out=9, rope_base=10000), "model.rope_base: 10000 needs an even head_dim"),
            (session("wrapper", qk_norm=True), "model.qk_norm: true is set but model.variant = \"wrapper\""),
            (dict(session("gqa", num_kv_groups=3), version=2), "model.variant: \"gqa\" needs \"version\": 3"),
        ]
        for s, start in cases:
            r, d = self.dump(s)
            self.assertEqual(r.returncode, 2, start)
            self.assertIsNone(d, start)
            self.assertTrue(r.stderr.startswith("mhaviz: " + start), r.stderr)


class DecodeFrom(unittest.TestCase):
    """`dump --decode-from P`: prefill P rows, then one at a time through a KV cache."""

    def dump(self, s, *args):
        with tempfile.TemporaryDirectory() as tmp:
            path, out = os.path.join(tmp, "s.json"), os.path.join(tmp, "out.json")
            with open(path, "w") as f:
                json.dump(s, f)
            r = run("dump", path, "-o", out, *args)
            return r, (json.load(open(out)) if os.path.exists(out) else None)

    def test_same_output_as_the_full_forward_and_the_cache_after_every_step(self):
        sessions = [
            (session("wrapper", d_out=2), ["heads", 3, 2], 2),
            (session("gqa", d_out=12, num_kv_groups=1, qk_norm=True, rope_base=100.0), ["heads", 1, 4], 1),
            (session("gqa", num_kv_groups=3, sliding_window=2), ["heads", 3, 2], 3),
            (session("mla", latent_dim=4, sliding_window=3), ["latent", 1, 4], 5),
            (session("fused_qkv", qk_norm=True), ["heads", 3, 2], 4),
        ]
        for s, (kind, heads, width), prefill in sessions:
            label = s["model"]["variant"] + " P " + str(prefill)
            r, full = self.dump(s, "--eval")
            self.assertEqual(r.returncode, 0, r.stderr)
            r, dec = self.dump(s, "--eval", "--decode-from", str(prefill))
            self.assertEqual(r.returncode, 0, r.stderr)
            # Bit for bit: the same float prints the same 9 significant digits.
            for name in ("output", "context", "attn_weights", "q", "v"):
                self.assertEqual(dec["tensors"][name], full["tensors"][name], label + " " + name)
            self.assertNotIn("attn_scores", dec["tensors"])
            d = dec["decode"]
            self.assertEqual(d["prefill"], prefill)
            names = ["latent"] if kind == "latent" else ["k", "v"]
            self.assertEqual([c["name"] for c in d["cache"]], names, label)
            window = s["model"].get("sliding_window", 0)
            self.assertEqual(d["window"], window)
            steps = d["steps"]
            self.assertEqual(len(steps), 5 - prefill + 1, label)
            for i, st in enumerate(steps):
                end = prefill + i
                held = min(end, window) if window else end
                self.assertEqual(st["queries"], [0 if i == 0 else end - 1, end], label)
                self.assertEqual(st["held"], [end - held, end], label)
                for n in names:
                    self.assertEqual(st["shapes"][n], [2, heads, held, width], label + " step %d" % i)
                self.assertEqual(st["elements"], 2 * held * heads * width * len(names), label)
                self.assertEqual(st["bytes"], 4 * st["elements"], label)
            # The cache after the last step holds the last rows of what its layout names.
            holds = d["cache"][0]["holds"]
            cache = dec["tensors"]["cache." + names[0]]
            self.assertEqual(cache["shape"], [2, heads, steps[-1]["held"][1] - steps[-1]["held"][0], width], label)
            # Item 0, head 0, first row held: the same offset in (b, G, T, hd) and the latent's (b, T, L).
            src, first = full["tensors"][holds]["data"], steps[-1]["held"][0]
            self.assertEqual(cache["data"][:width], src[first * width:(first + 1) * width], label)

    def test_render_draws_a_step_and_refuses_what_it_cannot(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, out = os.path.join(tmp, "s.json"), os.path.join(tmp, "kv.svg")
            with open(path, "w") as f:
                json.dump(session("gqa", num_kv_groups=1, sliding_window=2), f)
            r = run("render", path, "--eval", "--view", "kv-step", "2", "--decode-from", "2", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                svg = f.read()
            # Step 2 decodes row 3: the window of 2 holds rows 2-3; row 1 leaves at this step.
            self.assertIn("decoding row 3", svg)
            self.assertIn("holds rows 2\u20133", svg)
            self.assertIn("row 1 leaves the cache", svg)
            os.remove(out)
            for args, start in [(["--eval", "--view", "kv-step", "9"], "--step: 9 is not a step of this decode (0 to 4)"),
                                (["--eval", "--view", "kv-step", "--decode-from", "0"], "--decode-from: 0 is outside"),
                                (["--view", "kv-step"], "model.dropout: 0.1 in training mode")]:
                r = run("render", path, "-o", out, *args)
                self.assertEqual(r.returncode, 2, args)
                self.assertFalse(os.path.exists(out), args)
                self.assertTrue(r.stderr.startswith("mhaviz: " + start), r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_render_draws_the_variants_against_mha(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, out = os.path.join(tmp, "s.json"), os.path.join(tmp, "variants.svg")
            with open(path, "w") as f:
                json.dump(session("gqa", num_kv_groups=1, sliding_window=2), f)
            r = run("render", path, "--view", "variants", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                svg = f.read()
            # 3 heads of 2: GQA's row is the session's one K/V head, the window its 2; RoPE rotates head_dim 2.
            for text in ["GQA with 3 K/V heads (one per query head) = MHA", "bit-equal",
                         "Sliding window W = 2 &lt; T is not causal MHA", "1 K/V head (the session&apos;s)",
                         "MHA, window 2 (the session&apos;s)", "RoPE at 5 tokens is not no RoPE"]:
                self.assertIn(text, svg)
            os.remove(out)
            r = run("render", path, "--view", "variants", "3", "-o", out)
            self.assertEqual(r.returncode, 2)
            self.assertFalse(os.path.exists(out))
            self.assertEqual(r.stderr.strip(), "mhaviz: --view: variants takes no number, got '3'")

    def test_the_readmes_sessions_load_and_draw(self):
        # doc/sessions: scripts/make_variant_images.sh draws the README's pictures from them.
        folder = os.path.join(os.path.dirname(MAN), "sessions")
        want = {"gqa-6-heads-2-kv.json": "2 K/V heads (the session&apos;s)", "swa-window-3.json": "window 3 (the session&apos;s)",
                "rope.json": "RoPE base 10000 (the session&apos;s) against none"}
        self.assertEqual(sorted(os.listdir(folder)), sorted(want))
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in want.items():
                out = os.path.join(tmp, name + ".svg")
                r = run("render", os.path.join(folder, name), "--view", "variants", "-o", out)
                self.assertEqual(r.returncode, 0, name + ": " + r.stderr)
                with open(out) as f:
                    self.assertIn(text, f.read(), name)

    def test_refusals_write_nothing(self):
        s = session("weight_split")
        cases = [
            (s, ["--eval", "--decode-from", "0"], "--decode-from: 0 is outside [1, 5] (the session's tokens)"),
            (s, ["--eval", "--decode-from", "6"], "--decode-from: 6 is outside [1, 5]"),
            (s, ["--eval", "--decode-from=-2"], "--decode-from: -2 is outside [1, 5]"),
            (s, ["--decode-from", "2"], "model.dropout: 0.1 in training mode: decoding through a cache runs without"),
            (session("weight_split", causal=False), ["--eval", "--decode-from", "2"], "model.causal: false"),
        ]
        for sess, args, start in cases:
            r, d = self.dump(sess, *args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIsNone(d, args)
            self.assertTrue(r.stderr.startswith("mhaviz: " + start), r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        r = run("dump", "--model", "/nonexistent", "--text", "x", "--decode-from", "2")
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith("mhaviz: --decode-from: needs a SESSION"), r.stderr)


class ManPage(unittest.TestCase):
    def test_every_subcommand_is_documented(self):
        r = run("--help")
        subs = re.findall(r"^\s+([a-z][a-z-]+)\s", re.split(r"(?i)subcommands:", r.stdout)[1], re.M)
        self.assertIn("kv-memory", subs)
        with open(MAN) as f:
            man = f.read()
        for sub in subs:
            self.assertIn("mhaviz " + sub.replace("-", "\\-"), man, sub)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
