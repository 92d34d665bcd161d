"""A small byte-level BPE tokenizer.json for the random Qwen/Llama/Gemma checkpoints of
make_modern_checkpoints.py, which carry no tokenizer: ids 0-255 the bytes, <bos> 256 (which
its template puts first, as Gemma's and Llama 3.1's do), four merges 257-260. The CLI and
GUI tests copy a checkpoint with it beside (hf_folder), and rewrite a checkpoint's tensors
with read_raw_safetensors / write_raw_safetensors."""
import json
import os
import shutil
import struct

BOS = 256


def byte_symbols():
    """GPT-2's byte -> printable character map of byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# "hello world": ByteLevel splits "hello" | " world"; merges he, ll, Ġw, hell give
# [hell, o] and [Ġw, o, r, l, d].
MERGES = [("h", "e"), ("l", "l"), ("Ġ", "w"), ("he", "ll")]
HELLO_WORLD = [260, ord("o"), 259, ord("o"), ord("r"), ord("l"), ord("d")]


def tokenizer_json():
    vocab = {sym: b for b, sym in byte_symbols().items()}
    for k, (a, b) in enumerate(MERGES):
        vocab[a + b] = 257 + k
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": BOS, "content": "<bos>", "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {"<bos>": {"id": "<bos>", "ids": [BOS], "tokens": ["<bos>"]}}},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": [f"{a} {b}" for a, b in MERGES]}}


def hf_folder(modern, name, to):
    """Checkpoint `name` of MODERN copied to folder `to` (without its reference outputs), with
    tokenizer_json() beside it; returns `to`."""
    shutil.copytree(os.path.join(modern, name), to, ignore=shutil.ignore_patterns("reference"))
    with open(os.path.join(to, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f)
    return to


def read_raw_safetensors(path):
    """(header dict, data bytes) of a safetensors file, for tests that rename or add tensors."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), f.read()


def write_raw_safetensors(path, header, data):
    """The inverse of read_raw_safetensors: the header padded to 8 bytes, then data."""
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
