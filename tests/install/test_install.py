"""`cmake --install` into a DESTDIR lays out a desktop app: the binary, the menu entry, the
AppStream metainfo, the icon as SVG and as PNGs of the sizes their folders name, the man
page and the Debian copyright/changelog, each where the freedesktop specifications and the
FHS put it, with every @VARIABLE@ filled in. The entry and the metainfo pass
desktop-file-validate and `appstreamcli validate --no-net` when those are installed
(scripts/dev.sh test installs them), and name each other and the icon consistently.

usage: test_install.py CMAKE BUILD_DIR APP_ID
"""
import gzip
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

CMAKE, BUILD, APP_ID = sys.argv[1], sys.argv[2], sys.argv[3]
FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24]) if head[:8] == b"\x89PNG\r\n\x1a\n" else None


def validate(tool, args, path):
    exe = shutil.which(tool)
    if not exe:
        print(f"skip {tool} not installed: {os.path.basename(path)} not validated")
        return
    r = subprocess.run([exe] + args + [path], capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    check(r.returncode == 0, f"{tool} accepts {os.path.basename(path)}" + (f": {out}" if r.returncode else ""))
    if out:
        print("     " + out.replace("\n", "\n     "))


with tempfile.TemporaryDirectory() as dest:
    env = dict(os.environ, DESTDIR=dest)
    r = subprocess.run([CMAKE, "--install", BUILD, "--prefix", "/usr"], capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"cmake --install exits 0 ({r.stderr.strip()[:300]})")
    usr = os.path.join(dest, "usr")
    share = os.path.join(usr, "share")

    exe = os.path.join(usr, "bin", "mhaviz")
    check(os.path.isfile(exe) and os.access(exe, os.X_OK), "bin/mhaviz is an executable")
    if os.path.isfile(exe):
        r = subprocess.run([exe, "--version"], capture_output=True, text=True)
        check(r.returncode == 0 and "mhaviz" in r.stdout, f"the installed binary runs: {r.stdout.strip()!r}")

    desktop = os.path.join(share, "applications", APP_ID + ".desktop")
    metainfo = os.path.join(share, "metainfo", APP_ID + ".metainfo.xml")
    svg = os.path.join(share, "icons", "hicolor", "scalable", "apps", APP_ID + ".svg")
    man = os.path.join(share, "man", "man1", "mhaviz.1.gz")
    doc = os.path.join(share, "doc", "mhaviz")
    for path in (desktop, metainfo, svg, man, os.path.join(doc, "copyright"), os.path.join(doc, "changelog.gz")):
        check(os.path.isfile(path), "installed " + os.path.relpath(path, dest))

    # Every PNG size folder holds a square PNG of that size, and there are the usual ones.
    hicolor = os.path.join(share, "icons", "hicolor")
    sizes = sorted(int(d.split("x")[0]) for d in os.listdir(hicolor) if "x" in d) if os.path.isdir(hicolor) else []
    check({16, 32, 48, 64, 128, 256} <= set(sizes), f"PNG icons at 16..256 at least (found {sizes})")
    for s in sizes:
        png = os.path.join(hicolor, f"{s}x{s}", "apps", APP_ID + ".png")
        check(png_size(png) == (s, s) if os.path.isfile(png) else False, f"icons/hicolor/{s}x{s}/apps/{APP_ID}.png is {s}x{s}")
    if os.path.isfile(svg):
        check(ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg", "the scalable icon is SVG")

    texts = {}
    for path in (desktop, metainfo):
        if os.path.isfile(path):
            texts[path] = open(path, encoding="utf-8").read()
    if os.path.isfile(man):
        with gzip.open(man, "rt", encoding="utf-8") as f:
            texts[man] = f.read()
        check(".TH MHAVIZ 1" in texts[man], "the man page is troff with a .TH MHAVIZ 1 header")
        for sub in ("dump", "export", "render", "bench", "train", "lessons", "gui"):
            check(f".B mhaviz {sub}" in texts[man], f"the man page documents `mhaviz {sub}`")
    for path, text in texts.items():
        check("@" not in text.replace("@users", ""), f"no unfilled @VARIABLE@ in {os.path.basename(path)}")

    if desktop in texts:
        entry = dict(line.split("=", 1) for line in texts[desktop].splitlines() if "=" in line)
        check(entry.get("Exec", "").split()[0] == "mhaviz", f"Exec runs mhaviz from PATH: {entry.get('Exec')!r}")
        check(entry.get("Icon") == APP_ID, f"Icon= names the installed icon: {entry.get('Icon')!r}")
        validate("desktop-file-validate", [], desktop)
    if metainfo in texts:
        root = ET.fromstring(texts[metainfo])
        check(root.findtext("id") == APP_ID, "the metainfo id is the app id")
        check(root.findtext("launchable") == APP_ID + ".desktop", "the metainfo launches the installed desktop entry")
        shots = root.findall("screenshots/screenshot")
        check(len(shots) >= 1 and all((s.findtext("caption") or "").strip() for s in shots), "a screenshot with a caption")
        validate("appstreamcli", ["validate", "--no-net"], metainfo)

if FAILURES:
    print(f"{len(FAILURES)} failure(s)")
    sys.exit(1)
print("all passed")
