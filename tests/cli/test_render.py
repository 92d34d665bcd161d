"""`mhaviz render` as a user runs it, with no display at all (DISPLAY and WAYLAND_DISPLAY
removed): image sizes at every scale, the picture's cells (--cells-json values and the drawn
colours mapped back through the colormap) equal to PyTorch's values in
tests/data/reference/expected, masked cells hatched exactly where PyTorch masks, the caption band, transparent and dark
backgrounds, SVG as XML with one rect per cell (and escaped token text), and bad command
lines: one line, exit 2, no output file.

usage: test_render.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gui"))
from guitest import read_png  # noqa: E402  (stdlib-only PNG reader shared with the GUI tests)

MHAVIZ = sys.argv[1]
DATA = sys.argv[2]
FAILURES = []
ENV = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
SVG = "{http://www.w3.org/2000/svg}"


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def run(args, **kw):
    return subprocess.run([MHAVIZ] + args, capture_output=True, text=True, timeout=120, env=ENV, **kw)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def render(tmp, name, args):
    out = os.path.join(tmp, name)
    side = out + ".json"
    r = run(["render"] + args + ["-o", out, "--cells-json", side])
    ok = check(r.returncode == 0 and os.path.exists(out), "render %s %s (stderr: %s)" % (name, " ".join(args), r.stderr.strip()))
    return out, (json.load(open(side)) if ok else None)


def torch_matrix(session, tensor, head):
    """PyTorch's (T, T) matrix of batch 0, head `head` from tests/data/reference/expected, with
    None where the session's causal mask hides a cell (the picture hatches those; PyTorch has
    -inf in the masked scores and exactly 0 in the weights there). attn_scores_masked is
    attn_scores so masked."""
    with open(os.path.join(DATA, "reference", "expected", session + ".json")) as f:
        t = json.load(f)["tensors"]
    with open(os.path.join(DATA, "reference", "sessions", session + ".json")) as f:
        causal = json.load(f)["model"]["causal"]
    key = "attn_scores" if tensor == "attn_scores_masked" else tensor
    _, _, T, _ = t[key]["shape"]
    data = t[key]["data"][head * T * T:(head + 1) * T * T]
    m = [data[i * T:(i + 1) * T] for i in range(T)]
    if causal:
        assert key == "attn_scores" or all(m[i][j] == 0 for i in range(T) for j in range(i + 1, T))
        m = [[None if j > i else v for j, v in enumerate(row)] for i, row in enumerate(m)]
    return m


def nearest_lut(lut, rgb):
    best, best_d = 0, 1 << 30
    for i, c in enumerate(lut):
        d = (c[0] - rgb[0]) ** 2 + (c[1] - rgb[1]) ** 2 + (c[2] - rgb[2]) ** 2
        if d < best_d:
            best, best_d = i, d
    return best, best_d


def check_cells(path, side, session, tensor, label):
    """Each cell of the picture against PyTorch: its value in --cells-json within the
    reference tolerance (2e-5 + 1e-4 |x|), null exactly where PyTorch's cell is masked, and its
    colour (sampled in its top-left corner, away from the printed value) the colormap entry of
    PyTorch's value; masked cells hatched."""
    _, _, pixel = read_png(path)
    masked_colors = [tuple(c) for c in side["masked_colors"]]
    bad_value, bad_cell, bad_masked, n_masked, n = [], [], [], 0, 0
    for h in side["heads"]:
        want = torch_matrix(session, tensor, h["head"])
        lut = side["colormaps"][h["colormap"]]
        vmin, vmax, cell = h["vmin"], h["vmax"], h["cell"]
        for i in range(h["rows"]):
            for j in range(h["cols"]):
                x = int(h["x0"] + j * cell + 2)
                y = int(h["y0"] + i * cell + 2)
                rgb = pixel(x, y)
                n += 1
                v, exact = h["values"][i * h["cols"] + j], want[i][j]
                if (v is None) != (exact is None) or (v is not None and abs(v - exact) > 2e-5 + 1e-4 * abs(exact)):
                    bad_cell.append((h["head"], i, j, v, exact))
                if v is None:
                    n_masked += 1
                    corner = {pixel(x + dx, y + dy) for dx in range(0, int(cell) - 4, 2) for dy in (0, 3)}
                    if not corner <= set(masked_colors) or rgb in [tuple(c) for c in lut]:
                        bad_masked.append((h["head"], i, j, rgb))
                    continue
                if exact is None:
                    continue
                idx, dist = nearest_lut(lut, rgb)
                got = vmin + idx / 255.0 * (vmax - vmin)
                if dist != 0 or abs(got - exact) > (vmax - vmin) / 255.0 * 0.51 + 1e-6:
                    bad_value.append((h["head"], i, j, rgb, got, exact))
    check(n > 0 and not bad_cell, "%s: %d cells of --cells-json equal PyTorch's %s (bad: %s)" % (label, n, tensor, bad_cell[:3]))
    check(not bad_value, "%s: %d cell colours map back to PyTorch's values (bad: %s)" % (label, n, bad_value[:3]))
    check(not bad_masked, "%s: %d masked cells hatched in the masked colours only (bad: %s)" % (label, n_masked, bad_masked[:3]))
    return n_masked


def check_train_log(tmp):
    """--train-log: a run's curves drawn from its log (here one made up: the copy's loss falls
    after step 40, a probe every 20 steps). Returns a good log and a bad one for the error cases."""
    good, bad = os.path.join(tmp, "log.jsonl"), os.path.join(tmp, "bad.jsonl")
    with open(good, "w") as f:
        for s in range(1, 61):
            line = {"step": s, "loss": 4.2, "loss_first": 4.2, "loss_repeat": 4.2 if s <= 40 else 0.5}
            if s % 20 == 0:
                heads = {p: [[0.1, 0.1], [0.1, 0.9 if s > 40 else 0.1]]
                         for p in ("previous-token", "first-token", "duplicate-token", "induction")}
                line["eval"] = {"loss": 4.0, "heads": heads}
            f.write(json.dumps(line) + "\n")
    with open(bad, "w") as f:
        f.write('{"step": 1, "loss": 4.2}\n{"step": 1, "loss": 4.1}\n')
    out = os.path.join(tmp, "loss.png")
    r = run(["render", "--train-log", good, "-o", out, "--size", "1000x600", "--scale", "1", "--no-caption"])
    if check(r.returncode == 0 and os.path.exists(out), "render --train-log (stderr: %s)" % r.stderr.strip()):
        w, h, px = read_png(out)
        check(w <= 1000 and h <= 600, "the plots fill the --size canvas (%dx%d)" % (w, h))
        # The copy's curve (head colour 1, orange) is drawn, low in the loss plot after step 40.
        orange = [(x, y) for y in range(0, h, 2) for x in range(0, w, 2)
                  if max(abs(a - b) for a, b in zip(px(x, y)[:3], (242, 142, 43))) < 30]
        check(len(orange) > 50, "the copy's loss is drawn in its colour (%d pixels)" % len(orange))
    svg = os.path.join(tmp, "loss.svg")
    r = run(["render", "--train-log", good, "-o", svg])
    if check(r.returncode == 0, "render --train-log as SVG (%s)" % r.stderr.strip()):
        classes = [e.get("class") for e in ET.parse(svg).getroot().iter()]
        check(classes.count("loss-repeat") >= 40 and "detector" not in classes,
              "one line segment a step of the copy's loss (%d)" % classes.count("loss-repeat"))
    return good, bad


def main():
    tmp = tempfile.mkdtemp(prefix="mhaviz-render-test-")
    try:
        # [1] Output size = scale x logical size, for every view and scale 1-4.
        for view in (["--view", "grid"], ["--view", "head", "1"], ["--view", "step", "softmax"]):
            sizes = {}
            for scale in (1, 2, 3, 4):
                out, side = render(tmp, "size-%s-%d.png" % (view[1], scale), ["seed003-wrapper", "--scale", str(scale)] + view)
                if side:
                    sizes[scale] = png_size(out)
                    check(sizes[scale] == (side["logical_width"] * scale, side["logical_height"] * scale),
                          "%s scale %d: %dx%d = %d x logical %dx%d" % (view[1], scale, sizes[scale][0], sizes[scale][1], scale,
                                                                       side["logical_width"], side["logical_height"]))
            if 1 in sizes and 4 in sizes:
                check(sizes[4] == (sizes[1][0] * 4, sizes[1][1] * 4), "%s: 4x is exactly four times 1x" % view[1])

        # [2] Cell colours map back to values; masked cells hatched (weights, masked scores, dropout).
        out, side = render(tmp, "weights.png", ["seed003-wrapper", "--scale", "2"])
        if side:
            check(side["cells"] == 72, "grid of the wrapper lesson: 2 heads x 6 x 6 cells (got %d)" % side["cells"])
            n_masked = check_cells(out, side, "seed003-wrapper", "attn_weights", "weights, viridis, scale 2")
            check(n_masked == 2 * 15, "causal mask: 15 hatched cells per head (got %d)" % n_masked)
        out, side = render(tmp, "masked.png", ["seed003-wrapper", "--stage", "masked", "--scale", "1"])
        if side:
            check(side["heads"][0]["colormap"] == "diverging", "signed scores use the diverging map")
            check_cells(out, side, "seed003-wrapper", "attn_scores_masked", "masked scores, diverging, scale 1")
        out, side = render(tmp, "dropped.png", ["journey-dropout-half", "--stage", "dropped", "--view", "head", "1",
                                               "--colormap", "magma", "--scale", "2"])
        if side:
            check_cells(out, side, "journey-dropout-half", "attn_weights_dropped", "after dropout, magma, one head")

        # [3] Caption band holds text; without a caption the image is shorter.
        out, side = render(tmp, "caption.png", ["seed003-wrapper", "--scale", "1"])
        if side:
            w, h, pixel = read_png(out)
            bg = pixel(1, 1)
            y0, y1 = int(side["caption"]["y0"]), int(side["caption"]["y1"])
            inked = sum(1 for y in range(y0, min(y1, h)) for x in range(0, w, 2) if pixel(x, y) != bg)
            check(y1 > y0 and inked > 200, "caption band %d..%d holds text (%d inked pixels)" % (y0, y1, inked))
            out2, side2 = render(tmp, "nocaption.png", ["seed003-wrapper", "--scale", "1", "--no-caption"])
            if side2:
                check(side2["caption"]["y1"] == 0 and png_size(out2)[1] < h, "--no-caption: no caption band, a shorter image")

        # [4] Themes and transparency (corner pixel; read_png gives RGB, so alpha from the raw rows).
        out, _ = render(tmp, "dark.png", ["seed003-wrapper", "--theme", "dark", "--scale", "1"])
        _, _, pixel = read_png(out)
        check(sum(pixel(0, 0)) < 150, "dark theme: dark background %s" % (pixel(0, 0),))
        out, _ = render(tmp, "light.png", ["seed003-wrapper", "--scale", "1"])
        _, _, pixel = read_png(out)
        check(pixel(0, 0) == (255, 255, 255), "light theme: white background %s" % (pixel(0, 0),))
        out, _ = render(tmp, "transparent.png", ["seed003-wrapper", "--transparent", "--scale", "1"])
        check(first_alpha(out) == 0, "--transparent: alpha 0 in the corner")
        check(first_alpha(os.path.join(tmp, "light.png")) == 255, "solid background: alpha 255 in the corner")

        # [5] SVG: valid XML, one class="cell" rect per matrix element, token text escaped.
        for args, want in ((["seed003-wrapper"], 2 * 36), (["seed003-wrapper", "--view", "head", "1"], 36),
                           (["transformer-base-64"], 8 * 64 * 64), (["seed003-weight-split-6d", "--view", "step", "mask"], None)):
            out = os.path.join(tmp, "fig.svg")
            r = run(["render"] + args + ["-o", out])
            if not check(r.returncode == 0, "svg %s (stderr: %s)" % (" ".join(args), r.stderr.strip())):
                continue
            try:
                root = ET.parse(out).getroot()
            except ET.ParseError as e:
                check(False, "svg %s parses as XML: %s" % (" ".join(args), e))
                continue
            cells = [e for e in root.iter(SVG + "rect") if "cell" in (e.get("class") or "").split()]
            if want is None:
                want = 2 * 3 * 3  # the mask step of 3 tokens, 2 heads: every element drawn
            check(len(cells) == want, "svg %s: %d cell rects (want %d)" % (" ".join(args), len(cells), want))
        tricky = {"format": "mhaviz-session", "version": 1,
                  "tokens": ["a<b", "&amp;", "\"q\"", "it's", "x]]>y", "\u00e9t\u00e9"],
                  "embeddings": [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6], [-0.7, 0.8], [0.9, 0.1], [0.2, 0.3]],
                  "batch": 1,
                  "model": {"variant": "weight_split", "d_out": 4, "num_heads": 2, "context_length": 6, "dropout": 0.0,
                            "qkv_bias": False, "causal": True, "seed": 7}}
        sess = os.path.join(tmp, "tricky.json")
        with open(sess, "w") as f:
            json.dump(tricky, f)
        out = os.path.join(tmp, "tricky.svg")
        r = run(["render", sess, "-o", out])
        ok = check(r.returncode == 0, "svg with < & \" ' ]]> in tokens renders (stderr: %s)" % r.stderr.strip())
        if ok:
            try:
                root = ET.parse(out).getroot()
                texts = {e.text for e in root.iter(SVG + "text")}
                check(all(t in texts for t in tricky["tokens"]), "svg: every token appears as <text>, unescaped by the parser")
            except ET.ParseError as e:
                check(False, "svg with tricky tokens parses: %s" % e)

        # [6] The GPT-2 preset: 12 heads of 256 x 256, labels thinned, log scale by default.
        out, side = render(tmp, "gpt2.png", ["gpt2-small-256", "--scale", "1"])
        if side:
            check(side["cells"] == 12 * 256 * 256, "gpt2-small-256: 12 x 256 x 256 cells")
            check(all(h["log"] for h in side["heads"]), "gpt2-small-256: weights on a log scale by default")

        # [7] Bad command lines and unwritable outputs: one line, exit 2, no file left behind.
        os.makedirs(os.path.join(tmp, "bad"))
        adir = os.path.join(tmp, "bad", "adir.png")
        os.makedirs(adir)
        train_log, bad_log = check_train_log(tmp)
        bad = [
            (["seed003-wrapper", "-o", "/nonexistent/dir/x.png"], "output:"),
            (["seed003-wrapper", "-o", adir], "output:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.jpg")], "--output:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--scale", "5"], "--scale:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--scale", "0"], "--scale:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--view", "head", "2"], "--head:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--view", "step", "99"], "--step:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--view", "step", "nope"], "--step:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--view", "diagonal"], "--view:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--batch", "2"], "--batch:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--stage", "soft"], "--stage:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--colormap", "jet"], "--colormap:"),
            (["seed003-wrapper", "-o", os.path.join(tmp, "bad", "x.png"), "--theme", "sepia"], "--theme:"),
            (["no-such-lesson", "-o", os.path.join(tmp, "bad", "x.png")], ""),
            (["--train-log", os.path.join(tmp, "no-such.jsonl"), "-o", os.path.join(tmp, "bad", "x.png")], "--train-log:"),
            (["--train-log", bad_log, "-o", os.path.join(tmp, "bad", "x.png")], "--train-log:"),
            (["--train-log", tmp, "-o", os.path.join(tmp, "bad", "x.png")], "--train-log:"),
            (["seed003-wrapper", "--train-log", train_log, "-o", os.path.join(tmp, "bad", "x.png")], "--train-log:"),
        ]
        for args, field in bad:
            r = run(["render"] + args)
            args = args if args[0] != "--train-log" else ["", ""] + args
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mhaviz: " + field),
                  "render %s: exit 2, one line naming %r (got %d: %r)" % (" ".join(args[2:]) or args[0], field or "the session",
                                                                      r.returncode, r.stderr.strip()))
        left = sorted(os.listdir(os.path.join(tmp, "bad")))
        check(left == ["adir.png"], "no output or temporary file left behind (found %s)" % left)
        check(os.listdir(adir) == [], "nothing written inside the directory given as output")
        r = run(["render", "--help"])
        check(r.returncode == 0 and "no X server" in r.stdout, "render --help says it needs no X server")
    finally:
        if FAILURES or os.environ.get("MHAVIZ_KEEP_TEST_FILES"):
            print("test files kept in: " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        for f in FAILURES:
            print("  - " + f)
        sys.exit(1)
    print("all checks passed")


def first_alpha(path):
    """Alpha of the top-left pixel of an RGBA PNG (its first row filtered with any filter:
    for pixel 0 every PNG filter predicts 0 on the first row)."""
    import zlib
    data = open(path, "rb").read()
    pos, idat, ctype = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            ctype = body[9]
        elif kind == b"IDAT":
            idat += body
    if ctype != 6:
        return None
    raw = zlib.decompress(idat)
    return raw[4]


if __name__ == "__main__":
    main()
