#!/usr/bin/python3
"""PyTorch's side of the trainer's exactness tests: the book's GPTModel family trained by torch.

    train_reference.py OUT
        for each configuration of CONFIGS, in OUT/NAME/: init.safetensors (the parameters after
        torch.manual_seed(seed), in model.parameters() order), batches.npy (int64 (steps, B, T + 1),
        random ids), grads.safetensors (every parameter's gradient at step 1), losses.json (the
        loss of each of the first STEPS steps, before its update) and final.safetensors (the
        parameters after them), all trained with torch.optim.AdamW; OUT/normal.safetensors holds
        torch's normal_ draws (train_random.hpp) and OUT/manifest.json lists it all.

    train_reference.py --check-run DIR
        checks a run of `mhaviz train` in DIR: init.safetensors (written with --steps 0),
        batches.npy (--dump-batches) and log.jsonl (--log), with the run's settings in
        DIR/settings.json. torch's init from the seed must equal init.safetensors bit for bit,
        and torch, trained on the same batches, must give each step's logged loss (relative
        difference at most 1e-4). Prints one line per failure; exit status 1 if any.

The family is the book's (chapter 4, written out in export_example.py) or the attention-only
one: tok_emb, pos_emb, blocks of x = x + att(x), out_head. Dropout 0. Needs torch and numpy.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from export_example import GPTModel, MultiHeadAttention  # noqa: E402
from export_for_mhaviz import load_safetensors, save_safetensors  # noqa: E402

STEPS = 50
# Small shapes past the kernels' tile edges, and the induction experiment's own.
CONFIGS = [
    {"name": "attn_only", "vocab_size": 29, "context_length": 13, "emb_dim": 24, "n_heads": 3, "n_layers": 2,
     "attn_only": True, "qkv_bias": False, "batch": 5, "seed": 7, "lr": 1e-2, "weight_decay": 0.1},
    {"name": "full", "vocab_size": 29, "context_length": 13, "emb_dim": 24, "n_heads": 3, "n_layers": 2,
     "attn_only": False, "qkv_bias": True, "batch": 5, "seed": 11, "lr": 1e-2, "weight_decay": 0.1},
    {"name": "full_book", "vocab_size": 40, "context_length": 16, "emb_dim": 32, "n_heads": 4, "n_layers": 1,
     "attn_only": False, "qkv_bias": False, "batch": 3, "seed": 123, "lr": 4e-4, "weight_decay": 0.1},
    {"name": "experiment", "vocab_size": 64, "context_length": 32, "emb_dim": 64, "n_heads": 4, "n_layers": 2,
     "attn_only": True, "qkv_bias": False, "batch": 64, "seed": 1, "lr": 1e-2, "weight_decay": 0.1},
]
# normal_ draws: (seed, sizes...) of consecutive tensors from one torch.manual_seed. Sizes under 16
# take the scalar path with its cached value (so a 12 then an 8 share a draw); 107 and 133 reach
# the 3 angles of 2^24 where the range reduction's fused multiply-adds change the result.
NORMAL_DRAWS = [(123, [4096]), (1, [16]), (2, [17]), (3, [40]), (5, [5]), (6, [1]), (9, [12, 8, 17, 3]),
                (107, [1 << 20]), (133, [1 << 20])]


# [SECTION] the two families

class AttnOnlyBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(cfg["emb_dim"], cfg["emb_dim"], cfg["context_length"], 0.0, cfg["n_heads"],
                                      cfg["qkv_bias"])

    def forward(self, x):
        return x + self.att(x)


class AttnOnlyGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.trf_blocks = nn.Sequential(*[AttnOnlyBlock(cfg) for _ in range(cfg["n_layers"])])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1], device=idx.device))
        return self.out_head(self.trf_blocks(x))


def build(cfg):
    """The model as torch initialises it after torch.manual_seed(cfg["seed"])."""
    torch.manual_seed(cfg["seed"])
    if cfg["attn_only"]:
        return AttnOnlyGPT(cfg)
    book = {k: cfg[k] for k in ("vocab_size", "context_length", "emb_dim", "n_heads", "n_layers", "qkv_bias")}
    return GPTModel(dict(book, drop_rate=0.0))


def params(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def loss_of(model, batch):
    logits = model(batch[:, :-1])
    return nn.functional.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())


def train(model, cfg, batches):
    """(losses before each update, gradients at step 1) with AdamW over the batches."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=cfg["weight_decay"])
    losses, grads = [], None
    for b in batches:
        opt.zero_grad()
        loss = loss_of(model, torch.from_numpy(b))
        loss.backward()
        if grads is None:
            grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        opt.step()
        losses.append(loss.item())
    return losses, grads


# [SECTION] files

def write_reference(out):
    os.makedirs(out, exist_ok=True)
    manifest = {"steps": STEPS, "configs": CONFIGS, "normal": []}
    for cfg in CONFIGS:
        d = os.path.join(out, cfg["name"])
        os.makedirs(d, exist_ok=True)
        model = build(cfg)
        save_safetensors(params(model), os.path.join(d, "init.safetensors"))
        rng = np.random.RandomState(cfg["seed"])
        batches = rng.randint(0, cfg["vocab_size"], size=(STEPS, cfg["batch"], cfg["context_length"] + 1)).astype(np.int64)
        np.save(os.path.join(d, "batches.npy"), batches)
        losses, grads = train(model, cfg, batches)
        save_safetensors(grads, os.path.join(d, "grads.safetensors"))
        save_safetensors(params(model), os.path.join(d, "final.safetensors"))
        with open(os.path.join(d, "losses.json"), "w") as f:
            json.dump(losses, f)
    draws = {}
    for seed, sizes in NORMAL_DRAWS:
        torch.manual_seed(seed)
        for i, n in enumerate(sizes):
            draws[f"seed{seed}.{i}"] = torch.empty(n).normal_()
        manifest["normal"].append({"seed": seed, "sizes": sizes})
    save_safetensors(draws, os.path.join(out, "normal.safetensors"))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


# [SECTION] a run of `mhaviz train`

def check_run(d):
    with open(os.path.join(d, "settings.json")) as f:
        cfg = json.load(f)
    failures = []
    model = build(cfg)
    init = load_safetensors(os.path.join(d, "init.safetensors"))
    mine = params(model)
    if list(init) != list(mine):
        failures.append(f"init: tensors {list(init)} are not torch's {list(mine)}")
    for name, p in mine.items():
        got = init.get(name)
        if got is None or got.shape != p.shape or not torch.equal(got.view(torch.int32), p.view(torch.int32)):
            failures.append(f"init: {name} differs from torch's init for seed {cfg['seed']}")
    batches = np.load(os.path.join(d, "batches.npy"))
    with open(os.path.join(d, "log.jsonl")) as f:
        log = [json.loads(line) for line in f if line.strip()]
    if batches.shape[0] != len(log):
        failures.append(f"batches.npy holds {batches.shape[0]} steps, log.jsonl {len(log)}")
    losses, _ = train(model, cfg, batches[:len(log)])
    worst = 0.0
    for i, (entry, torch_loss) in enumerate(zip(log, losses)):
        if entry["step"] != i + 1:
            failures.append(f"log line {i + 1}: step {entry['step']}")
        rel = abs(entry["loss"] - torch_loss) / abs(torch_loss)
        worst = max(worst, rel)
        if rel > 1e-4:
            failures.append(f"step {i + 1}: mhaviz loss {entry['loss']!r}, torch {torch_loss!r} (relative {rel:.2e})")
    print(f"{len(log)} steps: worst relative loss difference {worst:.2e}")
    for f in failures:
        print(f)
    return 1 if failures else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check-run":
        return check_run(sys.argv[2])
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    torch.set_num_threads(1)  # the same sums in the same order on every run
    return write_reference(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
