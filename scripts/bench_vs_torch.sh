#!/usr/bin/env bash
# Side-by-side timing of mhaviz's forward and PyTorch's (Debian's python3-torch), same run.
# Usage: scripts/bench_vs_torch.sh [build dir, default build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  $sudo_cmd apt-get install -y python3-torch libopenblas0-pthread
fi
[ -x "$build/app/mhaviz" ] || { cmake --preset release -DMHAVIZ_GUI=OFF -DMHAVIZ_TESTS=OFF && cmake --build --preset release; }
exec /usr/bin/python3 scripts/bench_vs_torch.py "$build/app/mhaviz" "${@:2}"
