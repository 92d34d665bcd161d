#!/usr/bin/python3
"""`mhaviz dump --model FOLDER --ids …` on Qwen3, Qwen2, Llama and Gemma 3 checkpoints of random
configurations against the float64 reference forward (tests/models/hf_reference.py):

    test_hf_random_configs.py MHAVIZ WORK_DIR [CASES]

The fixture's checkpoints (make_modern_checkpoints.py) are a few chosen shapes; these are drawn
from a seeded generator over what a config.json may say: query and K/V heads (any divisor),
head_dim given or not (8 to 128), hidden and MLP widths that are no multiple of a kernel's
tile, vocabularies of 37 to 3001, 1 to 4 layers, tied or not, RoPE bases and Llama's llama3
and linear scalings, Llama's attention_bias, Qwen2's sliding window from max_window_layers,
Gemma's windows by sliding_window_pattern or layer_types and its query_pre_attn_scalar;
F32, BF16 or F16, one file or shards; sequences of 1 to 700 ids, past the windows. Each is
written as a script writes a checkpoint (config.json and weights, no tokenizer), so it runs
on ids. Every layer's attention weights must equal the reference's within 1e-4, and the last
logits within 1e-4 where they are below 50 in size, else within 2e-6 of their largest (random
weights make logits of up to ~130, whose float32 rounding alone is ~8e-6 each)."""
import json
import os
import random
import shutil
import subprocess
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import make_modern_checkpoints as checkpoints  # noqa: E402
from hf_reference import DecoderModel, load_hf_state  # noqa: E402

MHAVIZ = sys.argv[1] if len(sys.argv) > 1 else "build/dev/app/mhaviz"
WORK = sys.argv[2] if len(sys.argv) > 2 else "/tmp/mhaviz-hf-random"
CASES = int(sys.argv[3]) if len(sys.argv) > 3 else 40
DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def random_case(seed):
    """(config.json, dtype name, shards, ids) of case `seed`."""
    r = random.Random(seed)
    mt = r.choice(["qwen3", "qwen2", "llama", "gemma3_text"])
    heads = r.choice([1, 2, 3, 4, 6, 8])
    kv = r.choice([d for d in range(1, heads + 1) if heads % d == 0])
    head_dim = r.choice([8, 16, 32, 64, 128]) if mt in ("qwen3", "gemma3_text") or r.random() < 0.5 else None
    hidden = r.choice([16, 24, 48, 64, 96, 128, 200]) if head_dim else heads * r.choice([8, 16, 32, 64])
    c = {"model_type": mt, "architectures": [], "hidden_size": hidden, "num_hidden_layers": r.randint(1, 4),
         "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": r.choice([8, 40, 96, 300, 513]),
         "vocab_size": r.choice([37, 300, 513, 1000, 3001]), "max_position_embeddings": 1024,
         "rms_norm_eps": r.choice([1e-6, 1e-5]), "torch_dtype": "float32",
         "tie_word_embeddings": r.random() < 0.5, "rope_theta": r.choice([10000.0, 500000.0, 1000000.0])}
    if head_dim:
        c["head_dim"] = head_dim
    if mt == "llama":
        u = r.random()
        if u < 0.4:
            c["rope_scaling"] = {"factor": r.choice([8.0, 32.0]), "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                 "original_max_position_embeddings": r.choice([64, 8192]), "rope_type": "llama3"}
        elif u < 0.6:
            c["rope_scaling"] = {"factor": 4.0, "rope_type": "linear"}
        if r.random() < 0.3:
            c["attention_bias"] = True
    if mt == "qwen2" and r.random() < 0.3:
        c.update(use_sliding_window=True, sliding_window=r.randint(1, 40), max_window_layers=r.randint(0, 3))
    if mt == "gemma3_text":
        c.update(query_pre_attn_scalar=r.choice([16, 24, 64, 256]), sliding_window=r.randint(1, 60),
                 rope_local_base_freq=10000.0, hidden_activation="gelu_pytorch_tanh")
        if r.random() < 0.5:
            c["sliding_window_pattern"] = r.randint(1, 4)
        else:
            c["layer_types"] = [r.choice(["sliding_attention", "full_attention"]) for _ in range(c["num_hidden_layers"])]
        if r.random() < 0.4:
            c["rope_scaling"] = {"factor": 8.0, "rope_type": "linear"}
        if r.random() < 0.5:
            del c["tie_word_embeddings"]  # Gemma's default: tied
    dtype = r.choice(list(DTYPES))
    shards = r.choice([1, 1, 2, 3])
    T = r.choice([1, 2, 5, 12, 13, 31, 47, 64, 100, 150] * 3 + [129, 255, 513, 700])
    return c, dtype, shards, [r.randrange(c["vocab_size"]) for _ in range(T)]


class RandomConfigs(unittest.TestCase):
    def test_every_case_equals_the_reference(self):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        kinds = set()
        for seed in range(CASES):
            config, dtype, shards, ids = random_case(seed)
            kinds.add((config["model_type"], dtype))
            folder = os.path.join(WORK, f"case{seed}")
            os.makedirs(folder)
            state = checkpoints.random_state(config, 1000 + seed)
            checkpoints.write_weights(folder, state, DTYPES[dtype], shards)
            checkpoints.write_json(os.path.join(folder, "config.json"), config)
            model = load_hf_state(DecoderModel(config).double(), checkpoints.rounded(state, DTYPES[dtype]))
            with torch.no_grad():
                logits, weights = model(torch.tensor([ids]))
            what = f"case {seed} ({config['model_type']}, {dtype}, {shards} file(s), T = {len(ids)}): {json.dumps(config)}"
            r = subprocess.run([MHAVIZ, "dump", "--model", folder, "--ids", ",".join(map(str, ids))],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, f"{what}: {r.stderr}")
            tensors = json.loads(r.stdout)["tensors"]
            self.assertEqual(sorted(tensors), sorted([f"layers.{i}.attn_weights" for i in range(len(weights))] +
                                                     ["logits_last"]), what)
            for i, w in enumerate(weights):
                got = torch.tensor(tensors[f"layers.{i}.attn_weights"]["data"], dtype=torch.float64)
                self.assertEqual(tensors[f"layers.{i}.attn_weights"]["shape"], list(w.shape), what)
                self.assertLess((got.view(w.shape) - w).abs().max().item(), 1e-4, f"{what}: layer {i}")
            want = logits[0, -1]
            got = torch.tensor(tensors["logits_last"]["data"], dtype=torch.float64)
            tolerance = 2e-6 * max(50.0, want.abs().max().item())
            self.assertLess((got - want).abs().max().item(), tolerance, f"{what}: logits_last")
            shutil.rmtree(folder)
        # The draw reaches every architecture in every stored type.
        self.assertEqual(len(kinds), 12, sorted(kinds))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
