#!/usr/bin/env bash
# Renders assets/icons/mhaviz.svg to the PNG sizes installed under share/icons/hicolor
# (committed, so building needs no SVG renderer). Run after editing the SVG.
set -euo pipefail
cd "$(dirname "$0")/../assets/icons"
command -v rsvg-convert > /dev/null || { echo "rsvg-convert missing: apt-get install librsvg2-bin" >&2; exit 2; }
for s in 16 24 32 48 64 128 256 512; do
  rsvg-convert -w "$s" -h "$s" mhaviz.svg -o "mhaviz-$s.png"
done
