"""The binary on a CPU without AVX: `qemu-x86_64 -cpu Nehalem` (SSE4.2, no AVX, AVX2, FMA or
AVX-512) runs `mhaviz --version`, `mhaviz render` and a small `mhaviz bench`. A binary
compiled with -march=native on an AVX machine dies there with SIGILL, even for --version;
one built for x86-64-v2 with the kernels chosen at run time must work, fall back to
OpenBLAS, and refuse the kernels the emulated CPU lacks.

usage: test_portable.py QEMU PATH/TO/mhaviz
"""
import os
import struct
import subprocess
import sys
import tempfile

QEMU, MHAVIZ = sys.argv[1], sys.argv[2]
FAILURES = []
# OPENBLAS_CORETYPE (this machine's environment sets Haswell) would force OpenBLAS's AVX2
# kernels onto the emulated CPU; without it OpenBLAS picks its kernels from the CPU, as on
# a user's machine.
ENV = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "OPENBLAS_CORETYPE")}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def run(args, emulated=True):
    cmd = ([QEMU, "-cpu", "Nehalem"] if emulated else []) + [MHAVIZ] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


r = run(["--version"])
check(r.returncode == 0, f"--version exits 0 on Nehalem (got {r.returncode}: {r.stderr.strip()[:200]})")
check("mhaviz" in r.stdout, f"--version names the program: {r.stdout.strip()!r}")

with tempfile.TemporaryDirectory() as tmp:
    emulated, native = os.path.join(tmp, "nehalem.png"), os.path.join(tmp, "native.png")
    r = run(["render", "seed003-wrapper", "-o", emulated])
    check(r.returncode == 0, f"render exits 0 on Nehalem (got {r.returncode}: {r.stderr.strip()[:200]})")
    r2 = run(["render", "seed003-wrapper", "-o", native], emulated=False)
    check(r2.returncode == 0, "render exits 0 on this CPU")
    size = png_size(emulated) if os.path.exists(emulated) else None
    check(size is not None and size == png_size(native),
          f"the Nehalem render is a PNG the size of this CPU's ({size} vs {png_size(native)})")

# The products fall back to OpenBLAS there; the kernels the CPU lacks are refused.
r = run(["bench", "--tokens", "16", "--d-in", "16", "--d-out", "16", "--heads", "4", "--repeat", "3", "--warmup", "1"])
check(r.returncode == 0 and "median_ms=" in r.stdout, f"bench runs on Nehalem (got {r.returncode}: {r.stderr.strip()[:200]})")
check("openblas" in r.stdout.splitlines()[0] if r.stdout else False,
      f"bench on Nehalem names OpenBLAS as its backend: {r.stdout.splitlines()[:1]}")
for kernel in ("avx2", "avx512"):
    r = run(["bench", "--tokens", "16", "--d-in", "16", "--d-out", "16", "--heads", "4", "--backend", kernel])
    check(r.returncode == 2 and kernel in r.stderr, f"--backend {kernel} refused on Nehalem: exit {r.returncode}, {r.stderr.strip()!r}")

if FAILURES:
    print(f"{len(FAILURES)} failure(s)")
    sys.exit(1)
print("all passed")
