#!/usr/bin/env python3
"""`mhaviz dump --model` (and `bench --model`) on Qwen3, Qwen2, Llama and Gemma 3 folders as a user runs it, on the
checkpoints tests/models/make_modern_checkpoints.py writes with torch (each with the answer of
a float64 reference forward):

    test_hf_cli.py MHAVIZ MODERN_DIR

The fixture's folders have no tokenizer: each is copied with a small byte-level BPE
tokenizer.json (ids below the models' 300) whose template puts <bos> first. Every checkpoint's
dump equals the reference's attention weights and last logits within 1e-4; --text goes through
tokenizer.json with its template, --no-special-tokens leaves <bos> out; every broken folder is
one line on stderr naming the problem, exit status 2, and no output file."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_gpt_cli import load, read_safetensors, run  # noqa: E402 (the same mhaviz, argv[1])

MODERN = sys.argv[2] if len(sys.argv) > 2 else "build/dev/modern-models"
BOS = 256


def byte_symbols():
    """GPT-2's byte -> printable character map of byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# "hello world": ByteLevel splits "hello" | " world"; merges he, ll, Ġw, hell give
# [hell, o] and [Ġw, o, r, l, d].
MERGES = [("h", "e"), ("l", "l"), ("Ġ", "w"), ("he", "ll")]
HELLO_WORLD = [260, ord("o"), 259, ord("o"), ord("r"), ord("l"), ord("d")]


def tokenizer_json():
    vocab = {sym: b for b, sym in byte_symbols().items()}
    for k, (a, b) in enumerate(MERGES):
        vocab[a + b] = 257 + k
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": BOS, "content": "<bos>", "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {"<bos>": {"id": "<bos>", "ids": [BOS], "tokens": ["<bos>"]}}},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": [f"{a} {b}" for a, b in MERGES]}}


class Dump(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mhaviz_hf_cli_")
        cls.manifest = load(os.path.join(MODERN, "manifest.json"))
        cls.folders = {}
        for c in cls.manifest["checkpoints"]:
            to = os.path.join(cls.tmp, c["name"])
            shutil.copytree(os.path.join(MODERN, c["name"]), to, ignore=shutil.ignore_patterns("reference"))
            with open(os.path.join(to, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(tokenizer_json(), f)
            cls.folders[c["name"]] = to

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_every_checkpoint_equals_the_reference(self):
        self.assertGreaterEqual(len(self.manifest["checkpoints"]), 7)
        for c in self.manifest["checkpoints"]:
            expected = read_safetensors(os.path.join(MODERN, c["name"], "reference", "expected.safetensors"))
            for k, ids in enumerate(self.manifest["sequences"]):
                r = run("dump", "--model", self.folders[c["name"]], "--ids", ",".join(map(str, ids)))
                self.assertEqual(r.returncode, 0, f"{c['name']}: {r.stderr}")
                d = json.loads(r.stdout)
                self.assertEqual(d["format"], "mhaviz-hf-dump")
                self.assertEqual(d["token_ids"], ids)
                self.assertEqual(len(d["tokens"]), len(ids))
                self.assertEqual(d["model"]["model_type"], c["model_type"])
                self.assertEqual(d["model"]["sliding_layers"], [i for i, s in enumerate(c["sliding"]) if s])
                names = [f"layers.{l}.attn_weights" for l in range(c["n_layers"])] + ["logits_last"]
                self.assertEqual(sorted(d["tensors"]), sorted(names))
                for name in names:
                    shape, want = expected[f"s{k}.{name}"]
                    got = d["tensors"][name]
                    self.assertEqual(got["shape"], shape, name)
                    worst = max(abs(x - y) for x, y in zip(got["data"], want))
                    self.assertLess(worst, 1e-4, f"{c['name']} s{k} {name}")
                top = d["next_token"]["top"]
                self.assertEqual(len(top), 5)
                self.assertEqual(top[0]["id"], max(range(len(want)), key=lambda i: (want[i], -i)))
                self.assertTrue(all(a["p"] >= b["p"] for a, b in zip(top, top[1:])))

    def test_text_goes_through_tokenizer_json_and_its_template(self):
        folder = self.folders["gemma3_f32"]
        r = run("dump", "--model", folder, "--text", "hello world")
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        self.assertEqual(d["token_ids"], [BOS] + HELLO_WORLD)
        self.assertEqual(d["tokens"][:3], ["<bos>", "hell", "o"])
        r = run("dump", "--model", folder, "--text", "hello world", "--no-special-tokens")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["token_ids"], HELLO_WORLD)
        # The same ids given as --ids give the same dump.
        r2 = run("dump", "--model", folder, "--ids", ",".join(map(str, HELLO_WORLD)))
        self.assertEqual(r2.stdout, r.stdout)

    def test_output_file_is_written_whole(self):
        out = os.path.join(self.tmp, "dump.json")
        r = run("dump", "--model", self.folders["qwen3_f32"], "--ids", "1,2,3", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(load(out)["token_ids"], [1, 2, 3])

    def expect_error(self, args, needle):
        out = os.path.join(self.tmp, "never.json")
        r = run(*args, "-o", out)
        self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(needle, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertFalse(os.path.exists(out))

    def test_every_broken_folder_is_one_line(self):
        bad = load(os.path.join(MODERN, "bad", "manifest.json"))["cases"]
        self.assertGreaterEqual(len(bad), 20)
        for c in bad:
            with self.subTest(c["name"]):
                self.expect_error(["dump", "--model", os.path.join(MODERN, "bad", c["path"]), "--ids", "1,2"], c["error"])

    def test_a_tensor_missing_or_misshapen(self):
        for name, change, needle in (
                ("untied", {"tie_word_embeddings": False}, 'no tensor "lm_head.weight"'),
                ("kv_heads", {"num_key_value_heads": 1},
                 'tensor "model.layers.0.self_attn.k_proj.weight" is [64, 64], config.json gives [32, 64]')):
            folder = os.path.join(self.tmp, "broken_" + name)
            shutil.copytree(self.folders["qwen3_f32"], folder)
            config = load(os.path.join(folder, "config.json"))
            config.update(change)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(config, f)
            self.expect_error(["dump", "--model", folder, "--ids", "1,2"], needle)

    def test_input_errors(self):
        folder = self.folders["llama_mha_f32"]
        self.expect_error(["dump", "--model", folder, "--ids", "1,300"], "--ids: token 1 is id 300")
        self.expect_error(["dump", "--model", folder], "--text: give the text")
        self.expect_error(["dump", "--model", folder, "--text", "a", "--ids", "1"], "not both")
        self.expect_error(["dump", "--model", folder, "--ids", ",".join(["1"] * 129)], "longer than the model's context of 128")
        self.expect_error(["dump", "seed003-wrapper", "--no-special-tokens"], "need --model")



class Bench(unittest.TestCase):
    def test_bench_times_the_forward_and_refuses_an_edit(self):
        folder = os.path.join(MODERN, "gemma3_bf16_sharded")
        r = run("bench", "--model", folder, "--tokens", "16", "--repeat", "3", "--warmup", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Gemma 3, 4 layers, 4 query / 2 K/V heads of 32", r.stdout)
        self.assertRegex(r.stdout.splitlines()[-1], r"^median_ms=[0-9.]+ gflops=[0-9.]+ peak_rss_mib=[0-9.]+$")
        for args, needle in ((["--tokens", "129"], "--tokens: 129 is out of range [1, 128]"),
                             (["--edit-at", "3"], "--edit-at: a Qwen, Llama or Gemma model is timed whole")):
            r = run("bench", "--model", folder, *args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
