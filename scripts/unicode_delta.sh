#!/usr/bin/env bash
# Regenerates core/src/trained/unicode_newer.inc: where node's Unicode tables (those the reference
# tokenizers, @lenml/tokenizers and gpt-3-encoder, run on) differ from PCRE2's and utf8proc's
# (older: Debian 12's PCRE2 10.42 has Unicode 14, utf8proc 2.8 Unicode 15), the general category,
# combining class and decompositions node gives, so that the tokenizer normalizes and splits text
# as the reference does. Run it when either side's Unicode changes: hf_tokenizer_tests' NewerUnicode
# tests fail, naming a code point or a text, until it is run.
# Needs node, a C++ compiler, libpcre2-dev, libutf8proc-dev and nlohmann-json3-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c++ -O2 -std=c++20 scripts/unicode_delta.cpp -o "$tmp/delta" -lpcre2-8 -lutf8proc
"$tmp/delta" refs > "$tmp/refs.json"
node scripts/unicode_tables.js "$tmp/refs.json" | "$tmp/delta" > "$tmp/unicode_newer.inc"
mv "$tmp/unicode_newer.inc" core/src/trained/unicode_newer.inc
echo "wrote core/src/trained/unicode_newer.inc:"
sed -n 1,3p core/src/trained/unicode_newer.inc
