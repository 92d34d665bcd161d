#!/usr/bin/env python3
"""The mhaviz command line as a user runs it: outputs, every validation error, exit
codes, and no partial output files. Usage: test_cli.py MHAVIZ TEST_DATA_DIR"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "mhaviz"
DATA = sys.argv[2] if len(sys.argv) > 2 else "tests/data"
REF = os.path.join(DATA, "reference")
NAMES = ["seed003-wrapper", "seed003-weight-split-6d", "book-weight-split-3d", "journey-dropout-half",
         "seed002-fused-qkv-encoder"]


def run(*args, stdin=None, env=None):
    # errors="replace": a parse error quotes the bytes it stopped at, which may be invalid UTF-8.
    return subprocess.run([MHAVIZ, *args], input=stdin, capture_output=True, text=True, errors="replace", timeout=120,
                          env=env)


def load(path):
    with open(path) as f:
        return json.load(f)


class Basics(unittest.TestCase):
    def test_version(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout.strip(), r"^mhaviz \d+\.\d+\.\d+$")

    def test_help_on_every_subcommand(self):
        for sub, needle in [([], "dump"), (["dump"], "--output"), (["bench"], "--tokens"), (["lessons"], "lessons")]:
            r = run(*sub, "--help")
            self.assertEqual(r.returncode, 0, sub)
            self.assertIn(needle, r.stdout, sub)

    def test_lessons(self):
        r = run("lessons")
        self.assertEqual(r.returncode, 0)
        names = [line.split()[0] for line in r.stdout.splitlines()]
        self.assertEqual(names[0], "seed003-wrapper")
        for n in NAMES + ["gpt2-small-256", "gpt2-xl-128", "transformer-base-64"]:
            self.assertIn(n, names)


class Dump(unittest.TestCase):
    def check_against_reference(self, dumped, name):
        expected = load(os.path.join(REF, "expected", name + ".json"))["tensors"]
        tensors = dumped["tensors"]
        for key, want in expected.items():
            self.assertIn(key, tensors, f"{name}: {key}")
            self.assertEqual(tensors[key]["shape"], want["shape"], f"{name}: {key}")
            for got, w in zip(tensors[key]["data"], want["data"]):
                self.assertLessEqual(abs(got - w), 2e-5 + 1e-4 * abs(w), f"{name}: {key}")

    def test_reference_sessions_by_path_and_by_lesson_name(self):
        for name in NAMES:
            for arg in (os.path.join(REF, "sessions", name + ".json"), name):
                r = run("dump", arg)
                self.assertEqual(r.returncode, 0, r.stderr)
                d = json.loads(r.stdout)
                self.assertEqual(d["format"], "mhaviz-dump")
                self.check_against_reference(d, name)

    def test_dropout_reference_sessions_by_path(self):
        # Every variant at dropout 0.1 and 0.3 (not lessons): `dump` gives PyTorch's tensors,
        # attn_weights_dropped included, so a cell dropped on one side only fails.
        names = sorted(f[:-len(".json")] for f in os.listdir(os.path.join(REF, "sessions")) if "-dropout-" in f and
                       not f.endswith("half.json"))
        self.assertEqual(len(names), 6, names)
        for name in names:
            r = run("dump", os.path.join(REF, "sessions", name + ".json"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.check_against_reference(json.loads(r.stdout), name)

    def test_state_dict_names_and_shapes(self):
        d = json.loads(run("dump", "seed003-weight-split-6d").stdout)["tensors"]
        self.assertEqual(d["W_query.weight"]["shape"], [6, 6])
        self.assertEqual(d["out_proj.bias"]["shape"], [6])
        self.assertEqual(d["q"]["shape"], [2, 2, 3, 3])
        self.assertEqual(d["output"]["shape"], [2, 3, 6])
        d = json.loads(run("dump", "seed002-fused-qkv-encoder").stdout)["tensors"]
        self.assertEqual(d["qkv_layer.weight"]["shape"], [24, 8])
        self.assertEqual(d["linear_layer.bias"]["shape"], [8])

    def test_numbers_have_nine_significant_digits_at_most(self):
        text = run("dump", "seed003-wrapper").stdout
        data = text[text.index('"tensors"'):]
        for num in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?", data):
            digits = re.sub(r"e.*", "", num).replace("-", "").replace(".", "").lstrip("0")
            self.assertLessEqual(len(digits), 9, num)

    def test_stdin_and_output_file(self):
        with open(os.path.join(REF, "sessions", "seed003-wrapper.json")) as f:
            text = f.read()
        r = run("dump", "-", stdin=text)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_against_reference(json.loads(r.stdout), "seed003-wrapper")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            r = run("dump", "seed003-wrapper", "-o", out)
            self.assertEqual((r.returncode, r.stdout), (0, ""))
            self.check_against_reference(load(out), "seed003-wrapper")
            self.assertEqual(os.listdir(tmp), ["out.json"])

    def test_eval_flag_turns_dropout_off(self):
        d = json.loads(run("dump", "journey-dropout-half", "--eval").stdout)["tensors"]
        self.assertEqual(d["attn_weights_dropped"]["data"], d["attn_weights"]["data"])
        d = json.loads(run("dump", "journey-dropout-half").stdout)["tensors"]
        self.assertNotEqual(d["attn_weights_dropped"]["data"], d["attn_weights"]["data"])


class Export(unittest.TestCase):
    def test_npy_header_dtype_shape_and_data_equal_the_dump(self):
        import ast
        import struct
        dumped = json.loads(run("dump", "seed003-wrapper").stdout)["tensors"]
        with tempfile.TemporaryDirectory() as tmp:
            for name in ["output", "attn_weights", "heads.1.W_value.weight"]:
                out = os.path.join(tmp, "t.npy")
                r = run("export", "seed003-wrapper", "--tensor", name, "--format", "npy", "-o", out)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(out, "rb") as f:
                    raw = f.read()
                self.assertEqual(raw[:8], b"\x93NUMPY\x01\x00")
                hlen = struct.unpack("<H", raw[8:10])[0]
                header = ast.literal_eval(raw[10:10 + hlen].decode("latin1"))
                self.assertEqual(header["descr"], "<f4")
                self.assertFalse(header["fortran_order"])
                self.assertEqual(list(header["shape"]), dumped[name]["shape"])
                data = struct.unpack(f"<{len(raw[10 + hlen:]) // 4}f", raw[10 + hlen:])
                self.assertEqual(len(data), len(dumped[name]["data"]))
                for a, b in zip(data, dumped[name]["data"]):
                    self.assertAlmostEqual(a, b, delta=1e-8 + 1e-7 * abs(b))

    def test_latex_and_csv(self):
        r = run("export", "seed003-wrapper", "--tensor", "attn_scores_masked", "--format", "latex", "--select", "0,0",
                "--decimals", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "\\begin{bmatrix} ")
        self.assertEqual(lines[-1], "\\end{bmatrix}")
        self.assertEqual(len(lines), 8)
        self.assertEqual(lines[1].count("-\\infty"), 5)
        r = run("export", "seed003-wrapper", "--tensor", "output", "--format", "csv")
        rows = r.stdout.splitlines()
        self.assertEqual(len(rows), 12)  # (2, 6, 4): leading dimensions stacked as rows
        self.assertEqual(rows[0].split(",")[0], "-0.451920271")

    def test_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "x")
            for args, needle in [
                (["--tensor", "nope", "--format", "csv"], "--tensor: 'nope'"),
                (["--tensor", "output", "--format", "xlsx"], "--format: 'xlsx'"),
                (["--tensor", "attn_weights", "--format", "latex"], "--select"),
                (["--tensor", "attn_weights", "--format", "latex", "--select", "0,9"], "out of range"),
            ]:
                r = run("export", "seed003-wrapper", *args, "-o", out)
                self.assertEqual(r.returncode, 2, args)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
                self.assertIn(needle, r.stderr)
                self.assertFalse(os.path.exists(out))
            r = run("export", "seed003-wrapper", "--tensor", "output", "--format", "npy", "-o", "/proc/forbidden.npy")
            self.assertEqual(r.returncode, 2)
            self.assertIn("output: cannot write", r.stderr)


def base_session():
    return load(os.path.join(REF, "sessions", "seed003-wrapper.json"))


def edited(fn):
    s = base_session()
    fn(s)
    return json.dumps(s)


def set_path(path, value):
    def fn(s):
        node = s
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return fn


def delete(path):
    def fn(s):
        node = s
        for k in path[:-1]:
            node = node[k]
        del node[path[-1]]
    return fn


def many_tokens(n, width=3):
    def fn(s):
        s["tokens"] = ["w"] * n
        s["embeddings"] = [[0.5] * width] * n
        s["model"]["context_length"] = max(n, 1)
    return fn


# (what, session text, field the message starts with, text the message must contain)
BAD_SESSIONS = [
    ("malformed JSON", '{"format": "mhaviz-session",', "session", "malformed JSON"),
    ("not an object", "[1, 2, 3]", "session", "JSON object"),
    ("NaN literal", json.dumps(base_session()).replace("0.43", "NaN"), "session", "malformed"),
    ("deep nesting", "[" * 5000 + "]" * 5000, "session", "nested deeper"),
    ("empty file", "", "session", "malformed"),
    ("1e400 literal", json.dumps(base_session()).replace("0.43", "1e400"), "session", "number overflow"),
    ("wrong format", edited(set_path(["format"], "x")), "format", '"x"'),
    ("missing field", edited(delete(["model", "num_heads"])), "model.num_heads", "missing"),
    ("extra field", edited(set_path(["extra"], 1)), "extra", "unknown"),
    ("extra model field", edited(set_path(["model", "heads"], 3)), "model.heads", "unknown"),
    ("wrong type tokens", edited(set_path(["tokens"], "Your journey")), "tokens", "array"),
    ("wrong type d_out", edited(set_path(["model", "d_out"], "2")), "model.d_out", '"2"'),
    ("float d_out", edited(set_path(["model", "d_out"], 2.5)), "model.d_out", "2.5"),
    ("zero heads", edited(set_path(["model", "num_heads"], 0)), "model.num_heads", "0"),
    ("negative d_out", edited(set_path(["model", "d_out"], -2)), "model.d_out", "-2"),
    ("huge d_out", edited(set_path(["model", "d_out"], 1000000)), "model.d_out", "1000000"),
    ("huge tokens", edited(many_tokens(5000)), "tokens", "5000"),
    ("empty tokens", edited(many_tokens(0)), "tokens", "empty"),
    ("1e308 value", edited(set_path(["embeddings", 0, 0], 1e308)), "embeddings[0][0]", "1e+308"),
    ("ragged", edited(set_path(["embeddings", 2], [0.1])), "embeddings[2]", "1 values"),
    ("not divisible", edited(lambda s: s["model"].update(variant="weight_split", d_out=5)), "model.d_out", "5"),
    ("T > context_length", edited(set_path(["model", "context_length"], 4)), "tokens", "6 tokens"),
    ("dropout 1", edited(set_path(["model", "dropout"], 1)), "model.dropout", "1"),
    ("unknown variant", edited(set_path(["model", "variant"], "flash")), "model.variant", '"flash"'),
    ("unicode very long token", edited(set_path(["tokens", 0], "é" * 200)), "tokens[0]", "400 bytes"),
    ("memory", edited(lambda s: (many_tokens(2000, 1)(s), s.update(batch=64), s["model"].update(num_heads=64))),
     "model", "GiB"),
    # Non-finite and out-of-range numbers: JSON has no Infinity, so these are syntax errors.
    ("Infinity literal", json.dumps(base_session()).replace("0.43", "Infinity"), "session", "malformed"),
    ("-Infinity literal", json.dumps(base_session()).replace("0.43", "-Infinity"), "session", "malformed"),
    ("-1e400 literal", json.dumps(base_session()).replace("0.43", "-1e400"), "session", "number overflow"),
    ("1e7 value", edited(set_path(["embeddings", 0, 0], 1e7)), "embeddings[0][0]", "1e6"),
    ("-1e308 value", edited(set_path(["embeddings", 5, 2], -1e308)), "embeddings[5][2]", "-1e+308"),
    # Bytes that are not JSON text.
    ("binary file", "\x00\x01\x02 not json", "session", "malformed"),
    ("invalid UTF-8", json.dumps(base_session()).replace('"Your"', '"Y\udcffour"'), "session", "malformed"),
    ("lone surrogate escape", json.dumps(base_session()).replace('"Your"', '"\\udcff"'), "session", "malformed"),
    ("trailing garbage", json.dumps(base_session()) + " {}", "session", "malformed"),
    # Wrong types.
    ("null d_out", edited(set_path(["model", "d_out"], None)), "model.d_out", "null"),
    ("string causal", edited(set_path(["model", "causal"], "yes")), "model.causal", '"yes"'),
    ("integer training", edited(set_path(["model", "training"], 1)), "model.training", "1"),
    ("string embedding value", edited(set_path(["embeddings", 0, 0], "0.5")), "embeddings[0][0]", '"0.5"'),
    ("number token", edited(set_path(["tokens", 0], 5)), "tokens[0]", "5"),
    ("object token", edited(set_path(["tokens", 0], {"a": 1})), "tokens[0]", "object"),
    ("model is an array", edited(set_path(["model"], [1])), "model", "array"),
    ("embeddings is an object", edited(set_path(["embeddings"], {"0": [1, 2, 3]})), "embeddings", "object"),
    ("unsupported version", edited(set_path(["version"], 4)), "version", "4"),
    ("missing tokens", edited(delete(["tokens"])), "tokens", "missing"),
    ("missing model", edited(delete(["model"])), "model", "missing"),
    # Negative and zero sizes.
    ("negative batch", edited(set_path(["batch"], -1)), "batch", "-1"),
    ("zero batch", edited(set_path(["batch"], 0)), "batch", "0"),
    ("zero context_length", edited(set_path(["model", "context_length"], 0)), "model.context_length", "0"),
    ("negative num_heads", edited(set_path(["model", "num_heads"], -3)), "model.num_heads", "-3"),
    ("zero d_out", edited(set_path(["model", "d_out"], 0)), "model.d_out", "0"),
    ("zero d_in", edited(lambda s: s.update(embeddings=[[] for _ in s["tokens"]])), "embeddings[0]", "d_in"),
    ("negative dropout", edited(set_path(["model", "dropout"], -0.1)), "model.dropout", "-0.1"),
    ("negative seed", edited(set_path(["model", "seed"], -1)), "model.seed", "-1"),
    ("seed 2^64", edited(set_path(["model", "seed"], 2 ** 64)), "model.seed", "2^64"),
    # Huge sizes.
    ("1e6 tokens", edited(many_tokens(1000000, 1)), "tokens", "1000000"),
    ("context_length 1e6", edited(set_path(["model", "context_length"], 1000000)), "model.context_length", "1000000"),
    ("d_in 8193", edited(lambda s: s.update(embeddings=[[0.1] * 8193 for _ in s["tokens"]])), "embeddings[0]",
     "8193"),
    ("300 heads", edited(set_path(["model", "num_heads"], 300)), "model.num_heads", "300"),
    ("wrapper 2 x 8192 features", edited(lambda s: s["model"].update(d_out=8192, num_heads=2)), "model.num_heads",
     "16384"),
    ("fused_qkv not divisible", edited(lambda s: s["model"].update(variant="fused_qkv", d_out=6, num_heads=4)),
     "model.d_out", "6"),
    # Tokens.
    ("empty token", edited(set_path(["tokens", 0], "")), "tokens[0]", "empty"),
    ("very long ASCII token", edited(set_path(["tokens", 3], "x" * 100000)), "tokens[3]", "100000 bytes"),
    ("emoji token over 256 bytes", edited(set_path(["tokens", 1], "\U0001F600" * 65)), "tokens[1]", "260 bytes"),
    ("fewer embedding rows", edited(lambda s: s["embeddings"].pop()), "embeddings", "5 rows for 6 tokens"),
    ("empty variant", edited(set_path(["model", "variant"], "")), "model.variant", '""'),
    ("variant wrong case", edited(set_path(["model", "variant"], "Wrapper")), "model.variant", '"Wrapper"'),
]


# Session files at each dropout bound, for the app's entry point (`mhaviz gui FILE`).
def _write_session(name, dropout):
    folder = tempfile.mkdtemp(prefix="mhaviz-cli-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(edited(set_path(["model", "dropout"], dropout)))
    return path


DROPOUT_ONE = _write_session("dropout-one.json", 1.0)  # removed at exit (atexit below)
DROPOUT_NEGATIVE = _write_session("dropout-negative.json", -0.1)


class BadInput(unittest.TestCase):
    def test_every_bad_session_gives_one_line_exit_2_and_no_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            for what, text, field, needle in BAD_SESSIONS:
                src = os.path.join(tmp, "bad.json")
                with open(src, "wb") as f:
                    f.write(text.encode("utf-8", "surrogateescape"))  # \udcff -> the raw byte 0xff
                out = os.path.join(tmp, "out.json")
                r = run("dump", src, "-o", out)
                self.assertEqual(r.returncode, 2, what)
                lines = r.stderr.splitlines()
                self.assertEqual(len(lines), 1, f"{what}: {r.stderr!r}")
                self.assertTrue(lines[0].startswith(f"mhaviz: {field}: "), f"{what}: {lines[0]}")
                self.assertIn(needle, lines[0], what)
                self.assertFalse(os.path.exists(out), what)
                self.assertEqual(r.stdout, "", what)
        print(f"bad sessions tried: {len(BAD_SESSIONS)}", file=sys.stderr)

    def test_unicode_tokens_are_accepted_and_kept(self):
        # The other side of the table: unicode within the limits is valid input.
        toks = ["é", "中文", "\U0001F600", "naïve", "x" * 256, "step"]
        text = edited(set_path(["tokens"], toks))
        r = run("dump", "-", stdin=text)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["session"]["tokens"], toks)

    def test_failed_dump_leaves_existing_output_intact(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            with open(out, "w") as f:
                f.write("precious")
            r = run("dump", "no-such-lesson-or-file", "-o", out)
            self.assertEqual(r.returncode, 2)
            with open(out) as f:
                self.assertEqual(f.read(), "precious")
            self.assertEqual(os.listdir(tmp), ["out.json"])

    def test_unreadable_and_unwritable_paths(self):
        r = run("dump", "/nonexistent/session.json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/session.json", r.stderr)
        r = run("dump", "seed003-wrapper", "-o", "/nonexistent/dir/out.json")
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith("mhaviz: output: cannot write '/nonexistent/dir/out.json'"), r.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            r = run("dump", tmp)
            self.assertEqual(r.returncode, 2)
            self.assertIn("directory", r.stderr)

    def test_bad_flags(self):
        cases = [
            (["dump"], "session"),
            (["dump", "seed003-wrapper", "--frobnicate"], "frobnicate"),
            (["bench", "--variant", "flash"], "--variant"),
            (["bench", "--heads", "5", "--tokens", "8", "--d-in", "8", "--d-out", "8"], "model.d_out"),
            (["bench", "--tokens", "abc"], "tokens"),
            (["bench", "--tokens", "0"], "tokens"),
            (["bench", "--repeat", "-3"], "--repeat"),
            (["bench", "--backend", "cuda"], "--backend: 'cuda'"),
            (["--no-such-flag"], "no-such-flag"),
            (["dump", "seed003-wrapper", "extra-argument"], "extra-argument"),
            (["dump", "seed003-wrapper", "--eval=maybe"], "--eval"),
            (["dump", "seed003-wrapper", "-o", "/"], "output: cannot write"),
            (["export", "seed003-wrapper"], "--tensor"),
            (["export", "seed003-wrapper", "--tensor", "output", "--format", "csv", "--select", "abc"], "--select"),
            (["export", "seed003-wrapper", "--tensor", "output", "--format", "csv", "--decimals", "-1"], "--decimals"),
            (["bench", "--dropout", "1.5"], "model.dropout"),
            (["bench", "--batch", "0"], "batch"),
            (["bench", "--d-out", "1000000"], "model.d_out"),
            (["/nonexistent/session.json"], "/nonexistent/session.json"),
        ]
        # The desktop app refuses bad input before it opens a window (so without a display
        # too). A build without the GUI (-DMHAVIZ_GUI=OFF) only says that it has none.
        if "not built in this configuration" not in run("--help").stdout:
            cases += [
                (["gui", "/nonexistent/session.json"], "/nonexistent/session.json"),
                (["gui", "/"], "directory"),
                (["gui", "--width", "10"], "--width"),
                (["gui", "--stage", "bogus"], "--stage"),
                (["gui", "--colormap", "jet"], "--colormap"),
                (["gui", "--font-size", "100"], "--font-size"),
                (["gui", "--walkthrough"], "--walkthrough"),
                (["gui", DROPOUT_ONE], "model.dropout: 1 is outside [0, 1)"),
                (["gui", DROPOUT_NEGATIVE], "model.dropout: -0.1 is outside [0, 1)"),
            ]
        env = dict(os.environ)
        env.pop("DISPLAY", None)
        for args, needle in cases:
            r = run(*args, env=env)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, f"{args}: {r.stderr!r}")
            self.assertIn(needle, r.stderr, args)
        print(f"bad command lines tried: {len(cases)}", file=sys.stderr)


class Bench(unittest.TestCase):
    def test_machine_readable_last_line(self):
        r = run("bench", "--variant", "weight_split", "--tokens", "16", "--d-in", "16", "--d-out", "16", "--heads", "4",
                "--repeat", "20")
        self.assertEqual(r.returncode, 0, r.stderr)
        last = r.stdout.strip().splitlines()[-1]
        m = re.fullmatch(r"median_ms=([0-9.]+) gflops=([0-9.]+) peak_rss_mib=([0-9.]+)", last)
        self.assertIsNotNone(m, last)
        self.assertGreater(float(m.group(1)), 0)
        self.assertIn("20 runs", r.stdout)

    def bench_and_dump(self, variant, T, d_in, d_out, heads, dropout):
        """bench's report for a config, and `dump` of a session of the same config (its
        parameters counted from the state_dict tensors it writes, not from bench's formula)."""
        r = run("bench", "--variant", variant, "--tokens", str(T), "--d-in", str(d_in), "--d-out", str(d_out),
                "--heads", str(heads), "--repeat", "3", "--dropout", str(dropout))
        self.assertEqual(r.returncode, 0, variant + r.stderr)
        session = {"format": "mhaviz-session", "version": 1, "tokens": ["t%d" % i for i in range(T)],
                   "embeddings": [[0.01 * ((i * d_in + j) % 37) for j in range(d_in)] for i in range(T)], "batch": 1,
                   "model": {"variant": variant, "d_out": d_out, "num_heads": heads, "context_length": T,
                             "dropout": dropout, "qkv_bias": False, "causal": True, "seed": 123}}
        d = run("dump", "-", stdin=json.dumps(session))
        self.assertEqual(d.returncode, 0, d.stderr)
        return r.stdout, json.loads(d.stdout)

    def test_every_variant(self):
        # The numbers bench prints are the model's: parameters as many as `dump` writes, the
        # seeds' matmul count (the wrapper: 5 per head), FLOPs from the shapes, and the
        # GFLOP/s of its last line equal to those FLOPs over its median time.
        T, d_in, d_out, heads = 256, 128, 128, 4  # large enough that GFLOP shows 2-3 digits
        hd = {"wrapper": d_out}.get
        for v, calls in [("wrapper", 5 * heads), ("weight_split", 6), ("fused_qkv", 4)]:
            out, dumped = self.bench_and_dump(v, T, d_in, d_out, heads, 0.1)
            head_dim = hd(v, d_out // heads)
            merged = heads * head_dim
            flops = 2 * T * d_in * 3 * merged + 2 * 2 * heads * T * T * head_dim + (0 if v == "wrapper" else 2 * T * d_out * d_out)
            params = sum(len(t["data"]) for name, t in dumped["tensors"].items() if name.endswith((".weight", ".bias")))
            self.assertIn("mhaviz bench: %s b=1 T=%d d_in=%d d_out=%d heads=%d dropout=0.1 causal" % (v, T, d_in, d_out, heads),
                          out)
            m = re.search(r"matmul calls (\d+), ([0-9.]+) GFLOP per forward, (\d+) parameters", out)
            self.assertIsNotNone(m, out)
            self.assertEqual(int(m.group(1)), calls, v)
            self.assertLessEqual(abs(float(m.group(2)) - flops / 1e9), 0.0005 + 1e-9, (v, out))
            self.assertEqual(int(m.group(3)), params, v)
            self.assertEqual(dumped["cost"]["parameters"], params, v)
            self.assertEqual(dumped["cost"]["flops"], flops, v)
            last = re.fullmatch(r"median_ms=([0-9.]+) gflops=([0-9.]+) peak_rss_mib=([0-9.]+)", out.strip().splitlines()[-1])
            self.assertIsNotNone(last, out)
            median = float(last.group(1))
            self.assertGreater(median, 0, v)
            # Both printed rounded (4 decimals of ms, 2 of GFLOP/s): agree within that rounding.
            want = flops / (median * 1e-3) / 1e9
            self.assertLessEqual(abs(float(last.group(2)) - want), 0.01 + want * 0.5e-4 / median + 1e-9, (v, out))

    def test_dropout_range_is_one_check(self):
        # The bench flags reach the same check as session files: [0, 1), one line naming the field.
        for p, ok in [("1.0", False), ("1", False), ("-0.1", False), ("1e-300", True), ("0.999", True), ("0", True)]:
            r = run("bench", "--tokens", "8", "--d-in", "8", "--d-out", "8", "--heads", "2", "--repeat", "1",
                    "--dropout", p)
            if ok:
                self.assertEqual(r.returncode, 0, p + r.stderr)
                continue
            self.assertEqual(r.returncode, 2, p)
            self.assertEqual(r.stdout, "", p)
            self.assertEqual(r.stderr.strip(), "mhaviz: model.dropout: %g is outside [0, 1)" % float(p), p)

    def test_backends(self):
        # Every backend on one forward: a kernel the CPU cannot run is refused (exit 2, one line);
        # auto picks the widest the CPU runs (/proc/cpuinfo's flags), as the README says.
        flags = set()
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
        runs = {"avx512": "avx512f" in flags, "avx2": {"avx2", "fma"} <= flags, "openblas": True}
        best = next(b for b in ["avx512", "avx2", "openblas"] if runs[b])
        for b in ["openblas", "avx2", "avx512", "auto"]:
            r = run("bench", "--backend", b, "--tokens", "64", "--d-in", "96", "--d-out", "96", "--heads", "3", "--repeat", "3")
            if b != "auto" and not runs[b]:
                self.assertEqual(r.returncode, 2, b)
                self.assertIn(f"--backend: '{b}' needs a CPU with", r.stderr)
                continue
            self.assertEqual(r.returncode, 0, b + r.stderr)
            self.assertTrue(r.stdout.splitlines()[0].endswith("products in " + (best if b == "auto" else b)), r.stdout)

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
