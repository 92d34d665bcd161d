"""Captures of the heatmap grid checked pixel by pixel against PyTorch's numbers.

For every cell, the colour at the centre of cell (i, j) is mapped back through the
colormap (nearest entry of the 256-entry table the shader samples) to a value, which
must equal PyTorch's value (tests/data/reference/expected) within one colour step.
Masked cells must have one of the two hatch colours; unmasked cells must not.

usage (under xvfb-run): test_gui_pixels.py PATH/TO/mhaviz TESTS_DATA_DIR
"""
import json
import math
import os
import sys

import guitest as g

tmp = g.setup(sys.argv)
DATA = sys.argv[2]


def expected_matrix(name, stage, b, h):
    t = g.read_json(os.path.join(DATA, "reference", "expected", name + ".json"))["tensors"]
    key = {"scores": "attn_scores", "masked": "attn_scores", "scaled": "attn_scores",
           "weights": "attn_weights", "dropped": "attn_weights_dropped"}[stage]
    shape = t[key]["shape"]
    B, H, T = shape[0], shape[1], shape[2]
    data = t[key]["data"]
    hd = t["context"]["shape"][3]
    off = (b * H + h) * T * T
    m = [data[off + i * T:off + (i + 1) * T] for i in range(T)]
    if stage == "scaled":
        m = [[v / math.sqrt(hd) for v in row] for row in m]
    return T, m


def check_capture(name, stage, extra, b=0, theme="dark", settings=None):
    png = os.path.join(tmp, "%s-%s-b%d-%s-%d.png" % (name, stage, b, theme, len(os.listdir(tmp))))
    if settings:
        os.makedirs(png + ".cfg")
        with open(os.path.join(png + ".cfg", "settings.json"), "w") as f:
            json.dump(settings, f)
    session = os.path.join(DATA, "reference", "sessions", name + ".json")
    args = ["gui", session, "--exit-after-frames", "8", "--check-gl", "--no-restore", "--ignore-mouse",
            "--hide-cell-values", "--stage", stage, "--batch", str(b), "--theme", theme,
            "--config-dir", png + ".cfg", "--state-dir", png + ".state",
            "--width", "1280", "--height", "800", "--screenshot", png] + extra
    r = g.run(args)
    label = "%s %s batch %d %s %s%s" % (name, stage, b, theme, " ".join(extra), " %s" % settings if settings else "")
    if not g.check(r.returncode == 0, "%s: exit 0 (got %d: %s)" % (label, r.returncode, r.stderr.strip())):
        return
    side = g.read_json(png + ".json")
    width, height, pixel = g.read_png(png)
    g.check((width, height) == (side["width"], side["height"]), label + ": PNG size matches the sidecar")
    masked_colors = [tuple(c) for c in side["masked_colors"]]
    causal = side["causal"]
    bad_value = bad_mask = bad_colour = 0
    worst = 0.0
    cells = 0
    for lay in side["heads"]:
        h = lay["head"]
        T, exp = expected_matrix(name, stage, b, h)
        g.check(lay["rows"] == T and lay["cols"] == T, "%s head %d: %d x %d cells" % (label, h, T, T))
        lut = side["colormaps"][lay["colormap"]]
        vmin, vmax = lay["vmin"], lay["vmax"]
        cw = (lay["x1"] - lay["x0"]) / T
        ch = (lay["y1"] - lay["y0"]) / T
        for i in range(T):
            for j in range(T):
                cells += 1
                x = int(lay["x0"] + (j + 0.5) * cw)
                y = int(lay["y0"] + (i + 0.5) * ch)
                px = pixel(x, y)
                is_masked = causal and j > i and stage != "scores"
                near_mask = any(max(abs(a - c) for a, c in zip(px, m)) <= 2 for m in masked_colors)
                if is_masked:
                    if not near_mask:
                        bad_mask += 1
                        print("  masked cell (%d,%d) head %d has colour %s" % (i, j, h, px))
                    continue
                # Every colormap entry the pixel matches (adjacent 8-bit entries can be
                # equal, so a colour may stand for a short run of values).
                matches = [k for k, e in enumerate(lut) if max(abs(a - c) for a, c in zip(px, e)) <= 2]
                if not matches or near_mask:
                    bad_colour += 1
                    print("  cell (%d,%d) head %d colour %s is not on the colormap" % (i, j, h, px))
                    continue
                if lay.get("log"):
                    # Logarithmic scale: compare in log space; values at or below vmin are t = 0.
                    # Two colour steps: GPU log() is an approximation (llvmpipe's is ~1e-3).
                    values = [vmin * (vmax / vmin) ** (k / 255.0) for k in matches]
                    err = min(abs(math.log(v) - math.log(max(exp[i][j], vmin))) for v in values)
                    tol = 2.0 * math.log(vmax / vmin) / 255.0 + 1e-4
                else:
                    values = [vmin + k / 255.0 * (vmax - vmin) for k in matches]
                    err = min(abs(v - exp[i][j]) for v in values)
                    tol = 1.01 * (vmax - vmin) / 255.0 + 1e-4
                worst = max(worst, err / tol)
                if err > tol:
                    bad_value += 1
                    print("  cell (%d,%d) head %d: colour means %s, PyTorch %.4f" %
                          (i, j, h, ["%.4f" % v for v in values], exp[i][j]))
    g.check(cells > 0, label + ": cells were checked (%d)" % cells)
    if settings and settings.get("shared_scale") is False and stage == "scores":
        ranges = {(lay["vmin"], lay["vmax"]) for lay in side["heads"]}
        g.check(len(ranges) == len(side["heads"]), label + ": each head has its own range %s" % sorted(ranges))
    g.check(bad_mask == 0, label + ": masked cells have the masked colour")
    g.check(bad_colour == 0, label + ": unmasked cells are colours of the scale")
    g.check(bad_value == 0, label + ": every cell colour maps back to PyTorch's value (worst %.2f of tolerance)" % worst)
    # The colorbar: top = top of the scale, bottom = bottom.
    cb = side["colorbar"]
    lut = side["colormaps"][cb["colormap"]]
    cx = int((cb["x0"] + cb["x1"]) / 2)
    top, bottom = pixel(cx, int(cb["y0"]) + 1), pixel(cx, int(cb["y1"]) - 2)
    g.check(max(abs(a - c) for a, c in zip(top, lut[255])) <= 8, label + ": colorbar top is the end of the scale")
    g.check(max(abs(a - c) for a, c in zip(bottom, lut[0])) <= 8, label + ": colorbar bottom is the start of the scale")


check_capture("seed003-wrapper", "weights", ["--colormap", "viridis"])
check_capture("seed003-wrapper", "weights", ["--colormap", "cividis"], b=1, theme="light")
check_capture("seed003-wrapper", "scores", [])            # signed: diverging map
check_capture("seed003-wrapper", "scaled", ["--colormap", "magma"])
check_capture("journey-dropout-half", "dropped", ["--colormap", "magma"], b=0)
check_capture("journey-dropout-half", "dropped", [], b=1)
check_capture("seed002-fused-qkv-encoder", "weights", [])  # no causal mask
check_capture("book-weight-split-3d", "weights", ["--head", "1"])  # one head enlarged
check_capture("seed003-wrapper", "weights", ["--log-scale"], b=0)  # logarithmic scale
# Per-head scale (settings file): each head's colours span its own range.
check_capture("journey-dropout-half", "scores", [], settings={"shared_scale": False})
check_capture("journey-dropout-half", "weights", [], settings={"shared_scale": False})
g.finish()
