#!/usr/bin/env python3
"""`mhaviz calibrate` and the kernels.json cache as a user meets them: the command writes the
record for this CPU into --config-dir (beside an AVX2 one with --backend avx2); `bench` loads it
(one line, before the machine-readable last one, says which record it used); a missing, corrupt, truncated or stale file is calibrated
again and rewritten with one line on stderr, never an error. HOME and XDG_CONFIG_HOME point into
a temporary directory: nothing reaches the real settings. Usage: test_calibrate.py MHAVIZ"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "mhaviz"
TMP = tempfile.mkdtemp(prefix="mhaviz_calibrate_")


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


FLAGS = cpu_flags()
KERNEL = "avx512f" in FLAGS or {"avx2", "fma"} <= FLAGS
WIDEST = "avx512" if "avx512f" in FLAGS else "avx2"


def run(*args, home):
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, "config"))
    return subprocess.run([MHAVIZ, *args], capture_output=True, text=True, timeout=120, env=env)


def bench(home, *extra):
    # T = 128 against 768-wide weights: 75 M multiply-adds a product, past the first-use size.
    return run("bench", "--tokens", "128", "--repeat", "1", "--warmup", "0", *extra, home=home)


def records(path):
    with open(path) as f:
        return json.load(f)["kernels"]


def fresh_home(name):
    home = os.path.join(TMP, name)
    os.makedirs(os.path.join(home, "config", "mhaviz"))
    return home


@unittest.skipUnless(KERNEL, "this CPU has neither AVX-512F nor AVX2 + FMA: no kernel to calibrate")
class Calibrate(unittest.TestCase):
    def test_the_command_writes_the_record_into_config_dir(self):
        home = fresh_home("command")
        cfg = os.path.join(TMP, "command-cfg")
        r = run("calibrate", "--config-dir", cfg, home=home)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        out = r.stdout.splitlines()
        self.assertRegex(out[0], r"^mhaviz calibrate: the %s kernel on .+, \d+ threads$" % WIDEST)
        self.assertIn("128x768·768x2304", out[1])
        rows = [l for l in out[2:] if "row block" in l and not l.startswith("chose")]
        self.assertGreaterEqual(len(rows), 6)
        for l in rows:  # three GFLOP/s figures, all positive, and the rounds they are the best of
            self.assertTrue(all(float(x) > 0 for x in l.split()[:3]), l)
            self.assertRegex(l, r" \(best of [1-5]\)$")
        self.assertRegex(out[-1], r"^chose: tile \d+x\d+, row block .*; written to %s$" % os.path.join(cfg, "kernels.json"))
        recs = records(os.path.join(cfg, "kernels.json"))
        self.assertEqual([r["isa"] for r in recs], [WIDEST])
        # With both kernels, attention's short product is timed in both kinds of tile, and the
        # record names the one chosen (an AVX2 record has AVX2 tiles only).
        attention = [l for l in out if l.startswith("attention's q")]
        if WIDEST == "avx512":
            self.assertEqual(len(attention), 1, r.stdout)
            self.assertRegex(attention[0], r"^attention's q·kᵀ \(\d+ × 64 · 64 × 1024, one thread\): [0-9.]+ GFLOP/s in "
                             r"12x32 tiles, [0-9.]+ in AVX2 tiles; chose (AVX2|12x32)$")
            chose_avx2 = attention[0].endswith("AVX2")
            self.assertEqual(recs[0]["attention_tiles"], "avx2" if chose_avx2 else "avx512")
            self.assertEqual("in AVX2 tiles" in out[-1], chose_avx2)
        else:
            self.assertEqual(attention, [])
            self.assertEqual(recs[0]["attention_tiles"], "avx2")
        # Attention's rows per block: three candidates timed on a whole attention, the record
        # holding the one chosen.
        blocks = [l for l in out if l.startswith("attention's blocks")]
        self.assertEqual(len(blocks), 1, r.stdout)
        m = re.match(r"^attention's blocks \(4 heads × 1024 keys of 64, causal, raw scores kept\): "
                     r"((?:\d+ rows [0-9.]+ ms, )+\d+ rows [0-9.]+ ms); chose (\d+)$", blocks[0])
        self.assertIsNotNone(m, blocks[0])
        timed = [int(x) for x in re.findall(r"(\d+) rows", m.group(1))]
        self.assertTrue({24, 48, 96} <= set(timed) and len(timed) <= 4, blocks[0])  # and the default from the L2
        self.assertIn(int(m.group(2)), timed)
        self.assertEqual(recs[0]["attention_rows"], int(m.group(2)))
        self.assertIn("attention %s rows" % m.group(2), out[-1])
        self.assertFalse(os.path.exists(os.path.join(home, "config", "mhaviz", "kernels.json")))
        if WIDEST == "avx512":  # --backend avx2 adds AVX2's record and keeps the other
            r = run("calibrate", "--config-dir", cfg, "--backend", "avx2", home=home)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("the avx2 kernel", r.stdout)
            self.assertEqual(sorted(x["isa"] for x in records(os.path.join(cfg, "kernels.json"))), ["avx2", "avx512"])
        leftovers = [n for n in os.listdir(cfg) if n != "kernels.json"]
        self.assertEqual(leftovers, [])  # the temporary file was renamed, not left behind

    def test_bad_options_are_one_line_and_status_2(self):
        home = fresh_home("bad")
        for args, needle in ((["--backend", "openblas"], "--backend: 'openblas' is not one of auto, avx512, avx2"),
                             (["--backend", "sse"], "--backend: 'sse'")):
            r = run("calibrate", "--config-dir", os.path.join(TMP, "bad-cfg"), *args, home=home)
            self.assertEqual(r.returncode, 2)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(TMP, "bad-cfg", "kernels.json")))
        # A settings path that is a file: one line, status 2, nothing written.
        blocker = os.path.join(TMP, "a-file")
        open(blocker, "w").close()
        r = run("calibrate", "--config-dir", blocker, home=home)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_bench_loads_the_record_and_says_so(self):
        home = fresh_home("load")
        cache = os.path.join(home, "config", "mhaviz", "kernels.json")
        r = run("calibrate", home=home)  # the default settings directory: $XDG_CONFIG_HOME/mhaviz
        self.assertEqual(r.returncode, 0, r.stderr)
        before = open(cache).read()
        r = bench(home)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertRegex(r.stdout.splitlines()[-2], r"^kernel sizes \(%s\): tile .*; loaded from %s$" % (WIDEST, cache))
        self.assertEqual(open(cache).read(), before)

    def test_a_missing_corrupt_truncated_or_stale_cache_is_calibrated_again(self):
        good = fresh_home("good")
        self.assertEqual(bench(good).returncode, 0)  # missing: calibrated at first use
        text = open(os.path.join(good, "config", "mhaviz", "kernels.json")).read()
        mine = json.loads(text)["kernels"][0]
        other_cpu = dict(mine, cpu="AMD EPYC 7B13", isa="avx2", tile="3x32", attention_tiles="avx2")
        old_version = dict(mine, version=0)
        cases = {"missing": None, "corrupt": "{\"kernels\": [1, 2", "truncated": text[: len(text) // 2],
                 "not-a-record": json.dumps({"kernels": [dict(mine, tile="5x5")]}),
                 "stale": json.dumps({"kernels": [other_cpu, old_version]})}
        for name, content in cases.items():
            home = fresh_home("case-" + name)
            cache = os.path.join(home, "config", "mhaviz", "kernels.json")
            if content is not None:
                with open(cache, "w") as f:
                    f.write(content)
            r = bench(home)
            self.assertEqual(r.returncode, 0, name + ": " + r.stderr)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, name + ": " + r.stderr)
            self.assertRegex(lines[0], r"^mhaviz: calibrated the %s kernel's sizes in [0-9.]+ s because %s " % (WIDEST, cache))
            self.assertIn("written to " + cache, lines[0])
            recs = records(cache)
            self.assertIn(mine["cpu"], [x["cpu"] for x in recs], name)
            if name == "stale":  # the other CPU's record stays; the other version's goes
                self.assertEqual(sorted((x["cpu"], x["version"]) for x in recs),
                                 sorted([(other_cpu["cpu"], mine["version"]), (mine["cpu"], mine["version"])]))
            self.assertIn("calibrated now, written to " + cache, r.stdout.splitlines()[-2])
            r = bench(home)  # and the next run loads it, silently
            self.assertEqual(r.stderr, "", name)
            self.assertIn("loaded from " + cache, r.stdout.splitlines()[-2])

    def test_a_cache_that_cannot_be_written_is_no_error(self):
        home = fresh_home("readonly")
        os.rmdir(os.path.join(home, "config", "mhaviz"))
        open(os.path.join(home, "config", "mhaviz"), "w").close()  # the settings directory is a file
        r = bench(home)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("not written", r.stderr)
        self.assertRegex(r.stdout, r"median_ms=")

    def test_small_products_never_calibrate(self):
        home = fresh_home("small")
        r = run("bench", "--tokens", "16", "--d-in", "16", "--d-out", "16", "--heads", "4", "--repeat", "1", home=home)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertFalse(os.path.exists(os.path.join(home, "config", "mhaviz", "kernels.json")))
        self.assertIn("defaults from the cache sizes", r.stdout.splitlines()[-2])


if __name__ == "__main__":
    try:
        unittest.main(argv=sys.argv[:1], verbosity=2)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
