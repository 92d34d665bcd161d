#!/usr/bin/env python3
"""`mhaviz dump --model` (and `bench --model`) on Qwen3, Qwen2, Llama and Gemma 3 folders as a user runs it, on the
checkpoints tests/models/make_modern_checkpoints.py writes with torch (each with the answer of
a float64 reference forward):

    test_hf_cli.py MHAVIZ MODERN_DIR

The fixture's folders have no tokenizer: each is copied with a small byte-level BPE
tokenizer.json (ids below the models' 300) whose template puts <bos> first, and also run as
written (tokens are then the ids). Every checkpoint's dump equals the reference's attention
weights and last logits within 1e-4; --text goes through
tokenizer.json with its template, --no-special-tokens leaves <bos> out; every broken folder is
one line on stderr naming the problem, exit status 2, and no output file."""
import json
import os
import shutil
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_gpt_cli import load, read_safetensors, run  # noqa: E402 (the same mhaviz, argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from small_tokenizer import BOS, HELLO_WORLD, hf_folder, read_raw_safetensors, write_raw_safetensors  # noqa: E402

MODERN = sys.argv[2] if len(sys.argv) > 2 else "build/dev/modern-models"
class Folders(unittest.TestCase):
    """Every checkpoint copied with the small tokenizer, once per class."""
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mhaviz_hf_cli_")
        cls.manifest = load(os.path.join(MODERN, "manifest.json"))
        cls.folders = {}
        for c in cls.manifest["checkpoints"]:
            cls.folders[c["name"]] = hf_folder(MODERN, c["name"], os.path.join(cls.tmp, c["name"]))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def expect_error(self, args, needle, out_name="never.json"):
        out = os.path.join(self.tmp, out_name)
        r = run(*args, "-o", out)
        self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(needle, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertFalse(os.path.exists(out))


class Dump(Folders):
    def test_every_checkpoint_equals_the_reference(self):
        self.assertGreaterEqual(len(self.manifest["checkpoints"]), 7)
        for c in self.manifest["checkpoints"]:
            expected = read_safetensors(os.path.join(MODERN, c["name"], "reference", "expected.safetensors"))
            # With the small tokenizer, and as the script wrote the folder: no tokenizer files,
            # its tokens the ids.
            for k, ids, folder in [(k, ids, folder) for k, ids in enumerate(self.manifest["sequences"])
                                   for folder in (self.folders[c["name"]], os.path.join(MODERN, c["name"]))]:
                r = run("dump", "--model", folder, "--ids", ",".join(map(str, ids)))
                self.assertEqual(r.returncode, 0, f"{folder}: {r.stderr}")
                d = json.loads(r.stdout)
                self.assertEqual(d["format"], "mhaviz-hf-dump")
                self.assertEqual(d["token_ids"], ids)
                self.assertEqual(len(d["tokens"]), len(ids))
                if folder != self.folders[c["name"]]:
                    self.assertEqual(d["tokens"], [str(i) for i in ids])
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

    def test_ids_the_tokenizer_has_no_token_for(self):
        # tokenizer.json may leave ids out (here 261-289, below an added token at 290), and the
        # model's 300 rows go past the tokenizer's ids: such ids show as no token, never abort.
        folder = os.path.join(self.tmp, "ids_left_out")
        shutil.copytree(self.folders["qwen3_f32"], folder)
        tok = load(os.path.join(folder, "tokenizer.json"))
        tok["added_tokens"].append({"id": 290, "content": "<late>", "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": True})
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f)
        r = run("dump", "--model", folder, "--ids", "270,104,290,295")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["tokens"], ["", "h", "<late>", ""])
        png = os.path.join(self.tmp, "ids_left_out.png")
        r = run("render", "--model", folder, "--ids", "270,104,290,295", "--view", "model", "-o", png)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.getsize(png) > 0)

    def test_output_file_is_written_whole(self):
        out = os.path.join(self.tmp, "dump.json")
        r = run("dump", "--model", self.folders["qwen3_f32"], "--ids", "1,2,3", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(load(out)["token_ids"], [1, 2, 3])

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

    def test_gemma3_image_text_folders_read_their_language_model(self):
        # Gemma 3 4B and larger: model_type "gemma3", the text model's config in text_config and
        # its tensors under language_model.model. (as released) or model.language_model. (as
        # transformers 4.52 and later save them), beside a vision tower that is never read.
        src = os.path.join(MODERN, "gemma3_f32")
        header, data = read_raw_safetensors(os.path.join(src, "model.safetensors"))
        with open(os.path.join(src, "config.json")) as f:
            text_config = json.load(f)
        config = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
                  "text_config": text_config, "vision_config": {"model_type": "siglip_vision_model"}}
        expected = read_safetensors(os.path.join(src, "reference", "expected.safetensors"))
        for prefix in ("language_model.model.", "model.language_model."):
            folder = os.path.join(self.tmp, "gemma3_" + prefix.replace(".", "_"))
            os.makedirs(folder)
            renamed = {(prefix + k[len("model."):] if k.startswith("model.") else k): v for k, v in header.items()}
            vision = struct.pack("<4f", 1, 2, 3, 4)
            renamed["vision_tower.vision_model.embeddings.patch_embedding.weight"] = {
                "dtype": "F32", "shape": [2, 2], "data_offsets": [len(data), len(data) + len(vision)]}
            write_raw_safetensors(os.path.join(folder, "model.safetensors"), renamed, data + vision)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(config, f)
            for k, ids in enumerate(self.manifest["sequences"]):
                r = run("dump", "--model", folder, "--ids", ",".join(map(str, ids)))
                self.assertEqual(r.returncode, 0, f"{prefix}: {r.stderr}")
                d = json.loads(r.stdout)
                self.assertEqual(d["model"]["model_type"], "gemma3")
                for name, got in d["tensors"].items():
                    self.assertLess(max(abs(x - y) for x, y in zip(got["data"], expected[f"s{k}.{name}"][1])), 1e-4,
                                    f"{prefix} s{k} {name}")
            os.remove(os.path.join(folder, "model.safetensors"))
            self.expect_error(["dump", "--model", folder, "--ids", "1,2"], "model.safetensors")

    def test_a_folder_without_tokenizer_takes_ids_only(self):
        folder = os.path.join(MODERN, "gemma3_f32")  # config.json and model.safetensors only
        self.expect_error(["dump", "--model", folder, "--text", "Hello world"],
                          'text: "Hello" is not a token of this model: its tokens are the numbers 0 to 299')
        self.expect_error(["dump", "--model", folder, "--text", "Hello world"], "the folder has no tokenizer.json")
        by_text, by_ids = (run("dump", "--model", folder, *args) for args in (["--text", "5 17 230"], ["--ids", "5,17,230"]))
        self.assertEqual(by_text.returncode, 0, by_text.stderr)
        self.assertEqual(by_text.stdout, by_ids.stdout)

    def test_input_errors(self):
        folder = self.folders["llama_mha_f32"]
        self.expect_error(["dump", "--model", folder, "--ids", "1,300"], "--ids: token 1 is id 300")
        self.expect_error(["dump", "--model", folder], "--text: give the text")
        self.expect_error(["dump", "--model", folder, "--text", "a", "--ids", "1"], "not both")
        self.expect_error(["dump", "--model", folder, "--ids", ",".join(["1"] * 129)], "longer than the model's context of 128")
        self.expect_error(["dump", "seed003-wrapper", "--no-special-tokens"], "need --model")



class Bench(unittest.TestCase):
    def test_bench_times_the_forward_and_an_edit(self):
        folder = os.path.join(MODERN, "gemma3_bf16_sharded")
        r = run("bench", "--model", folder, "--tokens", "16", "--repeat", "3", "--warmup", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Gemma 3, 4 layers, 4 query / 2 K/V heads of 32", r.stdout)
        self.assertIn("full forward", r.stdout)
        self.assertRegex(r.stdout.splitlines()[-1], r"^median_ms=[0-9.]+ gflops=[0-9.]+ peak_rss_mib=[0-9.]+$")
        # An edit at the last position recomputes that row only, and is set beside one read of
        # the weights as held (BF16 panels for this BF16 folder: two bytes a weight).
        r = run("bench", "--model", folder, "--tokens", "16", "--edit-at", "15", "--repeat", "3", "--warmup", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("recompute after an edit at position 15 (rows 15 to 15)", r.stdout)
        self.assertIn("reading every weight once", r.stdout)
        self.assertRegex(r.stdout.splitlines()[-1],
                         r"^median_ms=[0-9.]+ gflops=[0-9.]+ peak_rss_mib=[0-9.]+ read_once_ms=[0-9.]+$")
        for args, needle in ((["--tokens", "129"], "--tokens: 129 is out of range [1, 128]"),
                             (["--tokens", "16", "--edit-at", "16"], "--edit-at: 16 is out of range [0, 15]")):
            r = run("bench", "--model", folder, *args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


class Render(Folders):
    """render --model --view model [L.H] of these folders: the cells drawn are dump's weights,
    the keys outside a sliding layer's window hatched as the window's; the heads grouped by
    the K/V head they share and the sliding layers labelled (the SVG's text); bad layers,
    heads and options of the other views refused in one line."""
    TEXT = "hello world, hello"

    def render(self, folder, *args, svg=False):
        out = os.path.join(self.tmp, "f.svg" if svg else "f.png")
        cells = os.path.join(self.tmp, "f.json")
        r = run("render", "--model", folder, "--text", self.TEXT, "--view", "model", *args, "-o", out, "--cells-json", cells)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            data = f.read()
        return load(cells), data

    def test_cells_are_dumps_weights_with_the_window_hatched(self):
        for name in ("qwen3_f32", "gemma3_f32", "llama3_bf16_sharded"):
            c = next(c for c in self.manifest["checkpoints"] if c["name"] == name)
            folder = self.folders[name]
            d = json.loads(run("dump", "--model", folder, "--text", self.TEXT).stdout)
            T, L, H = len(d["token_ids"]), c["n_layers"], c["n_heads"]
            drawn, _ = self.render(folder, "1.1", "--linear-scale")
            self.assertEqual(len(drawn["heads"]), L * H + 1, name)
            for k, head in enumerate(drawn["heads"]):
                layer, h = (k // H, k % H) if k < L * H else (1, 1)
                W = c["window"] if c["sliding"][layer] else 0
                w = d["tensors"][f"layers.{layer}.attn_weights"]["data"][h * T * T:(h + 1) * T * T]
                self.assertEqual((head["rows"], head["cols"]), (T, T))
                windowed = set(head.get("windowed", []))
                for i in range(T):
                    for j in range(T):
                        v = head["values"][i * T + j]
                        outside = W > 0 and j <= i - W
                        self.assertEqual(i * T + j in windowed, outside, f"{name} {layer}.{h} [{i}, {j}]")
                        if j > i or outside:
                            self.assertIsNone(v, f"{name} {layer}.{h} [{i}, {j}]")
                        else:
                            self.assertAlmostEqual(v, w[i * T + j], places=6, msg=f"{name} {layer}.{h} [{i}, {j}]")

    def test_groups_and_sliding_layers_are_labelled(self):
        _, qwen = self.render(self.folders["qwen3_f32"], svg=True)
        qwen = qwen.decode()
        self.assertIn(">K/V 0<", qwen)
        self.assertIn(">K/V 1<", qwen)
        self.assertIn("4 query heads sharing 2 K/V heads", qwen)
        self.assertNotIn("sliding W", qwen)
        _, gemma = self.render(self.folders["gemma3_f32"], svg=True)
        gemma = gemma.decode()
        self.assertEqual(gemma.count(">sliding W = 4<"), 2)  # layers 0 and 1 (sliding_window_pattern 3)
        self.assertIn("sliding W = 4 on 2 of 3 layers", gemma)
        self.assertIn("outside the sliding window", gemma)
        _, mha = self.render(self.folders["llama_mha_f32"], svg=True)
        self.assertNotIn(b"K/V 0", mha)  # as many K/V heads as query heads: no groups
        drawn, _ = self.render(self.folders["gemma3_f32"], "--detector", "induction")
        self.assertEqual(len(drawn["heads"]), 3 * 4)

    def test_a_layer_is_drawn_through_the_lessons_module(self):
        # --view layer L: every head of layer L as the lesson's gqa module draws it (hf_layer.hpp),
        # its cells dump's weights of that layer, the window's cells hidden on a sliding layer.
        for name, layer in (("gemma3_f32", 0), ("gemma3_f32", 2), ("qwen3_f32", 1), ("llama3_bf16_sharded", 1)):
            c = next(c for c in self.manifest["checkpoints"] if c["name"] == name)
            folder = self.folders[name]
            d = json.loads(run("dump", "--model", folder, "--text", self.TEXT).stdout)
            T, H = len(d["token_ids"]), c["n_heads"]
            W = c["window"] if c["sliding"][layer] else 0
            out, cells = os.path.join(self.tmp, "layer.png"), os.path.join(self.tmp, "layer.json")
            r = run("render", "--model", folder, "--text", self.TEXT, "--view", "layer", str(layer), "--linear-scale",
                    "-o", out, "--cells-json", cells)
            self.assertEqual(r.returncode, 0, r.stderr)
            drawn = load(cells)["heads"]
            self.assertEqual(len(drawn), H, name)
            w = d["tensors"][f"layers.{layer}.attn_weights"]["data"]
            for h, head in enumerate(drawn):
                for i in range(T):
                    for j in range(T):
                        v = head["values"][i * T + j]
                        if j > i or (W > 0 and j <= i - W):
                            self.assertIsNone(v, f"{name} {layer}.{h} [{i}, {j}]")
                        else:
                            self.assertAlmostEqual(v, w[(h * T + i) * T + j], places=5, msg=f"{name} {layer}.{h} [{i}, {j}]")

    def test_what_needs_a_gpts_layers_is_refused(self):
        folder = self.folders["gemma3_f32"]
        for args, needle in ((["--view", "layer", "3"], "--view: layer 3 is out of range [0, 2]"),
                             (["--view", "head", "1.4"], "--view: head 1.4 is out of range (heads 0 to 3)"),
                             (["--view", "sweep"], "--target: --view sweep needs the token judged"),
                             (["--view", "lens", "--corrupt", "b"], "--corrupt: only with --view patch"),
                             (["--view", "head", "0.0", "--norm-weighted"], "--norm-weighted: only with --view model"),
                             (["--view", "model", "3.0"], "--view: layer 3 is out of range [0, 2]"),
                             (["--view", "model", "0.4"], "--view: head 0.4 is out of range (heads 0 to 3)")):
            self.expect_error(["render", "--model", folder, "--text", "a", *args], needle, "never.png")
        # The commands of the interventions read the folder as its architecture (they had read
        # config.json as GPT-2's: "missing key n_layer"); their results: test_interv_cli.py.
        self.expect_error(["lens", "--model", folder, "--text", "a", "--top", "0"], "--top: 0 is not in [1, 300]")
        self.expect_error(["patch", "--model", folder, "--clean", "1 2", "--corrupt", "1 2", "--target", "2"],
                          "nothing to restore")

    def test_the_apps_interventions_are_checked_on_its_command_line(self):
        # They run on these folders in the app (test_gui_hfmodel.py); a bad one is one line,
        # exit 2, before any window (no display needed).
        folder = self.folders["qwen3_f32"]
        for args, needle in ((["--model-ablate", "0.1:avg"], "--model-ablate: mode \"avg\" is not zero or mean"),
                             (["--model-ablate", "x"], "--model-ablate: \"x\" is not LAYER.HEAD")):
            r = run("gui", "--model", folder, "--no-restore", *args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(needle, r.stderr)

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
