#!/usr/bin/env python3
"""Seeded random texts for the tokenizer tests' differential run against @lenml/tokenizers:
pieces of every kind a pre-tokenizer's regex tells apart (words and contractions, digit runs,
runs of spaces, tabs, newlines and other controls, letters and marks of many scripts,
symbols, emoji and flags, private use, variation selectors, tags, the tokenizers' own special
tokens and near misses), 1 to 60 pieces a text. Such a run found PCRE2's \\s taking U+180E.
Left out: U+FEFF and U+0085, where the JavaScript port's \\s parts from Hugging Face's and
mhaviz follows Hugging Face (test_tokenizer_hf.cpp says so on its own texts).

usage: random_texts.py SEED COUNT OUT.json"""
import json
import os
import random
import sys

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>",
            "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<pad>", "<think>", "</think>",
            "<|reserved_special_token_5|>", "<unk>", "<mask>", "[multimodal]", "<start_of_image>", "<|fim_prefix|>",
            "<|vision_start|>", "<|im_end", "<bos >"]
# Code point ranges (inclusive); ASCII printable weighs three times.
RANGES = [(0x20, 0x7E)] * 3 + [
    (0x01, 0x1F), (0x80, 0x9F), (0xA0, 0x17F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x5FF),
    (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x1800, 0x18AF), (0x2000, 0x206F),
    (0x2100, 0x214F), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xFE00, 0xFE0F),
    (0xFF00, 0xFFEF), (0xFFF0, 0xFFFD), (0x10000, 0x1007F), (0x1D400, 0x1D7FF), (0x1F1E6, 0x1F1FF),
    (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F)]
WORDS = ["the", " the", "Hello", "world", "don't", "I'm", "we'll", "'s", "'S", "'ll", "'VE", "12345", "3.14159",
         "1,000,000", "naïve", "café", "cafe\u0301", "Ⅻ", "①", "ﬁ", "Å", "A\u030a", "㎏", "\u200d", "\u200b", "\u2060",
         "\u180e", "👨\u200d👩\u200d👧", "🇩🇪", "\r\n", "\n\n\n", "\t", "   ", "    \n", " \n ", "http://x.y/z?a=1",
         "def f(x):\n    return x", "ひらがな", "中文字符", "한국어", "ру́сский", "\u00a0", "\u3000", "\u2028", "ǅ",
         "ß", "İ", "ﷺ", "▁", "<0x41>", "Ġ", "Ċ", "it'ſ"]


def piece(rng):
    r = rng.random()
    if r < 0.08:
        return rng.choice(SPECIALS)
    if r < 0.45:
        return rng.choice(WORDS)
    if r < 0.55:
        return " " * rng.randint(1, 6)
    if r < 0.6:
        return rng.choice(["\n", "\r", "\t", "\v", "\f"]) * rng.randint(1, 3)
    if r < 0.7:
        return str(rng.randint(0, 10 ** rng.randint(1, 12)))
    lo, hi = rng.choice(RANGES)
    chars = (chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 6)))
    return "".join(c for c in chars if c not in "\ufeff\x85")


def main():
    seed, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    texts = ["".join(piece(rng) for _ in range(rng.choice([1, 2, 3, 5, 8, 20, 60]))) for _ in range(count)]
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(texts, f)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
