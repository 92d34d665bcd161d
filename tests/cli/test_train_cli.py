#!/usr/bin/python3
"""`mhaviz train` as a user runs it: the files it writes, the log and the batches, --resume
giving the bits of an uninterrupted run, Ctrl-C, every bad input (one line naming the option
and the value, exit 2, nothing written or overwritten), and runs checked step by step against
PyTorch by tests/models/train_reference.py --check-run.

    test_train_cli.py MHAVIZ
"""
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "mhaviz"
HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "models", "train_reference.py")
# A small induction run: 2 layers of 2 heads, 16 wide, sequences of 16 + 1 over 24 ids.
SMALL = ["--layers", "2", "--heads", "2", "--d-model", "16", "--vocab", "24", "--context", "16", "--batch", "8"]


def run(*args, timeout=300):
    return subprocess.run([MHAVIZ, "train", *args], capture_output=True, text=True, errors="replace", timeout=timeout)


def safetensors_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def npy_int64(path):
    """(shape, values) of an int64 .npy file, with the standard library only."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", data[:10]
    n = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + n].decode()
    assert "'descr': '<i8'" in header and "'fortran_order': False" in header, header
    shape = tuple(int(x) for x in header.split("'shape': (")[1].split(")")[0].split(",") if x.strip())
    values = struct.unpack(f"<{(len(data) - 10 - n) // 8}q", data[10 + n:])
    return shape, values


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def listing(folder):
    """Every file below folder with its bytes: what a refused command must leave as it was."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                out[os.path.relpath(os.path.join(root, name), folder)] = f.read()
    return out


class Outputs(unittest.TestCase):
    def test_steps_zero_writes_the_initial_model_config_and_state(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.safetensors")
            r = run("--steps", "0", "-o", out, *SMALL)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(os.listdir(tmp)), ["config.json", "m.adamw", "m.safetensors"])
            with open(os.path.join(tmp, "config.json")) as f:
                config = json.load(f)
            self.assertEqual(config, {"vocab_size": 24, "context_length": 16, "emb_dim": 16, "n_heads": 2, "n_layers": 2,
                                      "drop_rate": 0.0, "qkv_bias": False, "attn_only": True})
            header = safetensors_header(out)
            self.assertEqual(header["__metadata__"]["step"], "0")
            names = [k for k in sorted(header, key=lambda k: header[k].get("data_offsets", [-1])[0]) if k != "__metadata__"]
            self.assertEqual(names[:3], ["tok_emb.weight", "pos_emb.weight", "trf_blocks.0.att.W_query.weight"])
            self.assertEqual(names[-1], "out_head.weight")
            self.assertNotIn("trf_blocks.0.norm1.scale", names)
            self.assertEqual(header["tok_emb.weight"]["shape"], [24, 16])
            state = safetensors_header(os.path.join(tmp, "m.adamw"))
            self.assertEqual(state["__metadata__"]["format"], "mhaviz-train-state")
            self.assertEqual(json.loads(state["__metadata__"]["settings"])["seed"], 123)
            self.assertIn("exp_avg_sq.out_head.weight", state)

    def test_full_blocks_have_the_books_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.safetensors")
            r = run("--steps", "2", "--full", "--qkv-bias", "-o", out, *SMALL)
            self.assertEqual(r.returncode, 0, r.stderr)
            header = safetensors_header(out)
            for name in ["trf_blocks.1.norm2.shift", "trf_blocks.0.ff.layers.0.weight", "trf_blocks.0.att.W_key.bias",
                         "final_norm.scale"]:
                self.assertIn(name, header)
            self.assertEqual(header["trf_blocks.0.ff.layers.0.weight"]["shape"], [64, 16])
            with open(os.path.join(tmp, "config.json")) as f:
                self.assertEqual(json.load(f)["attn_only"], False)

    def test_log_dump_and_batches_of_the_induction_task(self):
        with tempfile.TemporaryDirectory() as tmp:
            out, log, dump = (os.path.join(tmp, n) for n in ("m.safetensors", "log.jsonl", "b.npy"))
            r = run("--steps", "12", "--eval-every", "5", "--log", log, "--dump-batches", dump, "-o", out, *SMALL)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = read_log(log)
            self.assertEqual([line["step"] for line in lines], list(range(1, 13)))
            for line in lines:
                self.assertGreater(line["loss"], 0)
                self.assertGreater(line["loss_first"], 0)
                self.assertGreater(line["loss_repeat"], 0)
            self.assertEqual([line["step"] for line in lines if "eval" in line], [5, 10, 12])
            heads = lines[4]["eval"]["heads"]
            self.assertEqual(sorted(heads), ["duplicate-token", "first-token", "induction", "previous-token"])
            for scores in heads.values():
                self.assertEqual([len(layer) for layer in scores], [2, 2])
                for s in sum(scores, []):
                    self.assertTrue(0 <= s <= 1, s)
            shape, ids = npy_int64(dump)
            self.assertEqual(shape, (12, 8, 17))
            self.assertTrue(all(0 <= i < 24 for i in ids))
            for k in range(12 * 8):
                seq = ids[k * 17:(k + 1) * 17]
                repeated = [t for t in set(seq) if seq.count(t) > 1]
                self.assertIn(len(repeated), (4, 6, 7, 8), seq)  # trained lengths at context 16: 4, 6, 7, 8
                self.assertTrue(all(seq.count(t) == 2 for t in repeated), seq)

    def test_the_same_seed_gives_the_same_run_and_another_seed_another(self):
        with tempfile.TemporaryDirectory() as tmp:
            def model(seed, name):
                out = os.path.join(tmp, name + ".safetensors")
                r = run("--steps", "3", "--seed", seed, "--dump-batches", os.path.join(tmp, name + ".npy"), "-o", out,
                        *SMALL)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(out, "rb") as f, open(os.path.join(tmp, name + ".npy"), "rb") as g:
                    return f.read(), g.read()
            a, b, c = model("7", "a"), model("7", "b"), model("8", "c")
            self.assertEqual(a, b)
            self.assertNotEqual(a[0], c[0])
            self.assertNotEqual(a[1], c[1])


class Resume(unittest.TestCase):
    def test_resumed_run_has_the_bits_of_an_uninterrupted_one(self):
        with tempfile.TemporaryDirectory() as tmp:
            for d in ("straight", "resumed"):
                os.mkdir(os.path.join(tmp, d))
            def paths(d):
                return [os.path.join(tmp, d, n) for n in ("m.safetensors", "log.jsonl", "b.npy")]
            out, log, dump = paths("straight")
            # Probes every 4 steps: step 8, where the first part stops (and probes, as a run's last
            # step), is one of them in the uninterrupted run too.
            r = run("--steps", "20", "--eval-every", "4", "--log", log, "--dump-batches", dump, "-o", out, *SMALL)
            self.assertEqual(r.returncode, 0, r.stderr)
            out2, log2, dump2 = paths("resumed")
            r = run("--steps", "8", "--eval-every", "4", "--log", log2, "-o", out2, *SMALL)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = run("--resume", "--steps", "20", "--eval-every", "4", "--log", log2, "--dump-batches", dump2, "-o", out2)
            self.assertEqual(r.returncode, 0, r.stderr)
            for a, b in ((out, out2), (dump, dump2), (out[:-len(".safetensors")] + ".adamw", out2[:-len(".safetensors")] + ".adamw")):
                with open(a, "rb") as f, open(b, "rb") as g:
                    self.assertEqual(f.read(), g.read(), b)
            strip = [{k: v for k, v in line.items() if k != "seconds"} for line in read_log(log)]
            self.assertEqual(strip, [{k: v for k, v in line.items() if k != "seconds"} for line in read_log(log2)])

    def test_ctrl_c_writes_the_checkpoint_and_the_run_resumes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out, log = os.path.join(tmp, "m.safetensors"), os.path.join(tmp, "log.jsonl")
            p = subprocess.Popen([MHAVIZ, "train", "--steps", "1000000", "--log", log, "-o", out, *SMALL],
                                 stderr=subprocess.PIPE, text=True)
            time.sleep(2.0)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 130, err)
            self.assertIn("continue with --resume", err)
            step = int(safetensors_header(out)["__metadata__"]["step"])
            self.assertGreater(step, 0)
            self.assertEqual(len(read_log(log)), step)
            self.assertEqual([f for f in os.listdir(tmp) if ".tmp" in f], [])
            r = run("--resume", "--steps", str(step + 3), "--log", log, "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual([line["step"] for line in read_log(log)], list(range(1, step + 4)))


def tiny_tokenizer(folder):
    sys.path.insert(0, os.path.join(HERE, "..", "models"))
    from make_checkpoints import write_tokenizer  # GPT-2's 256 byte tokens, six merges, <|endoftext|>
    write_tokenizer(folder)


class Text(unittest.TestCase):
    STORY = "I HAD always thought Jack Gisburn rather a cheap genius--though a good fellow enough. " * 4

    def test_by_characters(self):
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(tmp, "story.txt"), os.path.join(tmp, "m.safetensors")
            with open(src, "w") as f:
                f.write(self.STORY)
            r = run("--task", "text", src, "--steps", "3", "--context", "16", "--batch", "4", "--log",
                    os.path.join(tmp, "log.jsonl"), "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "config.json")) as f:
                config = json.load(f)
            chars = sorted(set(self.STORY))
            self.assertEqual(config["char_vocab"], chars)
            self.assertEqual(config["vocab_size"], len(chars))
            self.assertNotIn("loss_repeat", read_log(os.path.join(tmp, "log.jsonl"))[0])
            self.assertFalse(os.path.exists(os.path.join(tmp, "vocab.json")))

    def test_with_gpt2s_tokenizer_the_files_go_beside_the_model(self):
        with tempfile.TemporaryDirectory() as tmp:
            tok, run_dir = os.path.join(tmp, "tok"), os.path.join(tmp, "run")
            os.mkdir(tok)
            os.mkdir(run_dir)
            tiny_tokenizer(tok)
            src = os.path.join(tmp, "story.txt")
            with open(src, "w") as f:
                f.write(self.STORY)
            r = run("--task", "text", src, "--tokenizer", tok, "--steps", "2", "--context", "8", "--batch", "2",
                    "-o", os.path.join(run_dir, "model.safetensors"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(os.listdir(run_dir)), ["config.json", "merges.txt", "model.adamw", "model.safetensors",
                                                           "vocab.json"])
            with open(os.path.join(run_dir, "config.json")) as f:
                self.assertEqual(json.load(f)["vocab_size"], 263)


class BadInput(unittest.TestCase):
    def expect_refused(self, args, field, needle, folder):
        before = listing(folder)
        r = run(*args)
        self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, f"{args}: {r.stderr!r}")
        self.assertTrue(lines[0].startswith(f"mhaviz: {field}"), f"{args}: {lines[0]}")
        self.assertIn(needle, lines[0], args)
        self.assertEqual(listing(folder), before, f"{args}: files changed")

    def test_bad_options_and_texts(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = {"empty.txt": b"", "nul.txt": b"abc\x00def" * 20, "latin1.txt": "caf\xe9 ".encode("latin-1") * 30,
                     "short.txt": b"a short story", "one.txt": b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}
            for name, data in files.items():
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(data)
            out = os.path.join(tmp, "m.safetensors")
            with open(out, "wb") as f:
                f.write(b"precious")  # a bad command must leave it
            t = lambda name: os.path.join(tmp, name)  # noqa: E731
            cases = [
                (["--task", "text", t("empty.txt")], "text", "is empty"),
                (["--task", "text", t("nul.txt")], "text", "not text (a NUL byte at offset 3)"),
                (["--task", "text", t("latin1.txt")], "text", "not UTF-8 text (byte 0xE9 at offset 3)"),
                (["--task", "text", t("short.txt")], "text", "holds 13 tokens (characters), too few for one batch of 64"),
                (["--task", "text", t("one.txt"), "--context", "8", "--batch", "2"], "text", "single distinct character"),
                (["--task", "text", t("missing.txt")], "text", "cannot read"),
                (["--task", "text", tmp], "text", "is a folder"),
                (["--task", "text", t("short.txt"), "--tokenizer", tmp, "--context", "2", "--batch", "1"], "--tokenizer",
                 "vocab.json"),
                (["--task", "text"], "--task", "needs the text's file"),
                (["--task", "induction", "x.txt"], "--task", "takes no file"),
                (["--task", "poetry"], "--task", "'poetry' is not one of"),
                (["--tokenizer", tmp], "--tokenizer", "only with --task text"),
                (["--task", "text", t("short.txt"), "--vocab", "64"], "--vocab", "the vocabulary is the text's"),
                (["--heads", "5"], "--heads", "5 does not divide --d-model 64"),
                (["--layers", "0"], "--layers", "0 is out of range"),
                (["--d-model", "0"], "--d-model", "0 is out of range"),
                (["--context", "1"], "--context", "1 is out of range"),
                (["--context", "8"], "--context", "8 is too short for the induction task"),
                (["--vocab", "20"], "--vocab", "20 is too small for the induction task"),
                (["--batch", "0"], "--batch", "0 is out of range"),
                (["--batch", "60000", "--context", "4096", "--task", "copy"], "--batch", "over the limit of 4.0 GiB"),
                (["--lr", "0"], "--lr", "is not a learning rate"),
                (["--lr", "nan"], "--lr", "is not a learning rate"),
                (["--weight-decay", "-1"], "--weight-decay", "is not in [0, 1 / lr)"),
                (["--steps", "-1"], "--steps", "-1 is out of range"),
                (["--eval-every", "-5"], "--eval-every", "negative"),
                (["--attn-only", "--full"], "--full", "not both"),
                (["--backend", "cuda"], "--backend", "'cuda' is not one of"),
                (["--heads", "two"], "Could not convert: --heads = two", "mhaviz --help"),
            ]
            for args, field, needle in cases:
                self.expect_refused([*args, "-o", out], field, needle, tmp)
            self.expect_refused(["-o", t("m.bin")], "-o", "does not end in .safetensors", tmp)
            self.expect_refused(["-o", t("nowhere/m.safetensors")], "-o", "is not a folder", tmp)
            self.expect_refused(["--log", t("nowhere/log.jsonl"), "-o", out], "--log", "is not a folder", tmp)
            self.expect_refused(["--dump-batches", tmp, "-o", out], "--dump-batches", "is a folder", tmp)
            r = run()
            self.assertEqual(r.returncode, 2)
            self.assertIn("--output", r.stderr)
            print(f"bad command lines tried: {len(cases) + 5}", file=sys.stderr)

    def test_a_checkpoint_that_does_not_match(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.safetensors")
            self.assertEqual(run("--steps", "3", "-o", out, *SMALL).returncode, 0)
            self.expect_refused(["--resume", "--heads", "4", "-o", out], "--heads",
                                "4 does not match the run being resumed (2", tmp)
            self.expect_refused(["--resume", "--full", "-o", out], "--full", "does not match", tmp)
            self.expect_refused(["--resume", "--steps", "2", "-o", out], "--steps", "fewer than the 3 steps", tmp)
            self.expect_refused(["--resume", "-o", os.path.join(tmp, "other.safetensors")], "--resume",
                                "other.adamw' is missing", tmp)
            # A state from another run (step 5), a config.json edited by hand, a model file cut short.
            other = os.path.join(tmp, "other")
            os.mkdir(other)
            self.assertEqual(run("--steps", "5", "-o", os.path.join(other, "m.safetensors"), *SMALL).returncode, 0)
            with open(os.path.join(tmp, "m.adamw"), "rb") as f:
                state = f.read()
            with open(os.path.join(other, "m.adamw"), "rb") as f, open(os.path.join(tmp, "m.adamw"), "wb") as g:
                g.write(f.read())
            self.expect_refused(["--resume", "-o", out], "--resume", "is at step 3 but", tmp)
            with open(os.path.join(tmp, "m.adamw"), "wb") as g:
                g.write(state)
            with open(os.path.join(tmp, "config.json")) as f:
                config = json.load(f)
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(dict(config, n_heads=4), f)
            self.expect_refused(["--resume", "-o", out], "--resume", "n_heads is 4, the run's settings say 2", tmp)
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(config, f)
            with open(out, "rb") as f:
                model = f.read()
            with open(out, "wb") as f:
                f.write(model[:len(model) // 2])
            self.expect_refused(["--resume", "-o", out], "--resume", "m.safetensors", tmp)


class AgainstTorch(unittest.TestCase):
    """Runs of the command line against torch: the --steps 0 model is torch's init from the seed,
    bit for bit, and each logged loss is torch's on the dumped batches (within 1e-4)."""

    def check(self, extra, settings):
        with tempfile.TemporaryDirectory() as tmp:
            r = run("--steps", "0", "-o", os.path.join(tmp, "init.safetensors"), *SMALL, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = run("--steps", "40", "--eval-every", "0", "--log", os.path.join(tmp, "log.jsonl"), "--dump-batches",
                    os.path.join(tmp, "batches.npy"), "-o", os.path.join(tmp, "m.safetensors"), *SMALL, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "settings.json"), "w") as f:
                json.dump(dict(settings, vocab_size=24, context_length=16, emb_dim=16, n_heads=2, n_layers=2, lr=1e-2,
                               weight_decay=0.1), f)
            check = subprocess.run(["/usr/bin/python3", REFERENCE, "--check-run", tmp], capture_output=True, text=True,
                                   timeout=300, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
            print(check.stdout.strip(), file=sys.stderr)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_attention_only(self):
        self.check(["--seed", "5"], {"attn_only": True, "qkv_bias": False, "seed": 5})

    def test_full_blocks_with_qkv_bias(self):
        self.check(["--seed", "6", "--full", "--qkv-bias"], {"attn_only": False, "qkv_bias": True, "seed": 6})


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
