#!/usr/bin/python3
"""Interventions on small GPT checkpoints, computed by a plain torch forward with hooks.

    make_interventions.py OUT

Writes one folder per checkpoint in OUT (a GPT-2 layout with a tied head, the book's GPTModel
with qkv bias, the book's attention-only model), as make_checkpoints.py writes them, and
OUT/manifest.json listing them with the cases below; each folder's reference/ holds
interventions.safetensors, all F32:

  clean.lens           (L, T, V) logit lens: final norm + head on the residual after block l
  clean.norm_weighted  (L, H, T, T) α_ij · ‖W_O[:, h] v_j‖ (Kobayashi et al. 2020)
  ablate{i}.weights    (L, H, T, T) attention weights with case i's heads ablated
  ablate{i}.logits     (T, V) logits of that run
  sweep                (L, H) log p(target) at the last position with each head zero-ablated
                       alone, minus the clean run's
  patch_head           (L, H) patching a head's context from clean into corrupt, normalised
                       (logit difference target − vs): 1 = restored, 0 = no effect
  patch_resid          (L, T) the same for the residual after block l at position t

Needs torch and the standard library.
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_checkpoints as mc  # noqa: E402

CLEAN = [34, 71, 262, 258, 84, 255, 0, 260, 188, 72]
CORRUPT = [34, 71, 262, 258, 84, 255, 0, 260, 97, 72]  # position 8 differs
TARGET, VS = 71, 84
ABLATIONS = [  # (heads, mode)
    ([[1, 2]], "zero"),
    ([[0, 1], [2, 0]], "mean"),
    ([[0, 0], [0, 3], [1, 1]], "zero"),
]
BASE = dict(E=32, H=4, L=3, P=16, eps=1e-5, prefix="", mask_buffers=False, dtype="F32")
CHECKPOINTS = [
    dict(BASE, name="hf_tied", layout="hf", seed=11, tied=True, qkv_bias=True, attn_only=False),
    dict(BASE, name="book_bias", layout="book", seed=12, tied=False, qkv_bias=True, attn_only=False),
    dict(BASE, name="book_attn_only", layout="book", seed=13, tied=False, qkv_bias=False, attn_only=True),
]


def edit_context(ctx, layer, ablate, mode, patch_heads, source):
    """ctx (H, T, hd) of layer, in place: the ablations of that layer, then its head patches
    from source's cache. A "mean" is of this run's own context (each head's mean reads only
    that head, so the order of the list is moot)."""
    for i, h in ablate or []:
        if i == layer:
            ctx[h] = 0 if mode == "zero" else ctx[h].mean(dim=0, keepdim=True).expand_as(ctx[h])
    for i, h in patch_heads:
        if i == layer:
            ctx[h] = source["ctx"][layer][h]


def forward(p, spec, ids, ablate=None, mode="zero", patch_heads=(), patch_resid=(), source=None):
    """ids: T ids -> a cache: weights [L] (H, T, T), ctx [L] (H, T, hd), resid [L] (T, E),
    logits (T, V), lens (L, T, V). ablate: [[l, h]]; patches read source's cache."""
    L, H, eps, attn_only = spec["L"], spec["H"], spec["eps"], spec["attn_only"]
    T, E = len(ids), p["wte"].shape[1]
    hd = E // H
    head = p.get("head", p["wte"])
    final = (lambda x: x) if attn_only else (lambda x: mc.layer_norm(x, p["lnf_w"], p["lnf_b"], eps))
    x = p["wte"][ids] + p["wpe"][:T]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    cache = {"weights": [], "ctx": [], "resid": [], "lens": []}
    for i in range(L):
        a = x if attn_only else mc.layer_norm(x, p[f"{i}.ln1_w"], p[f"{i}.ln1_b"], eps)
        qkv = a @ p[f"{i}.qkv_w"].t() + p[f"{i}.qkv_b"]
        q, k, v = (qkv[:, j * E:(j + 1) * E].view(T, H, hd).transpose(0, 1) for j in range(3))
        w = torch.softmax((q @ k.transpose(1, 2) / math.sqrt(hd)).masked_fill(mask, float("-inf")), dim=-1)
        ctx = w @ v  # (H, T, hd)
        edit_context(ctx, i, ablate, mode, patch_heads, source)
        cache["weights"].append(w)
        cache["ctx"].append(ctx.clone())
        x = x + ctx.transpose(0, 1).reshape(T, E) @ p[f"{i}.proj_w"].t() + p[f"{i}.proj_b"]
        if not attn_only:
            m = mc.layer_norm(x, p[f"{i}.ln2_w"], p[f"{i}.ln2_b"], eps)
            m = mc.gelu_tanh(m @ p[f"{i}.fc_w"].t() + p[f"{i}.fc_b"])
            x = x + m @ p[f"{i}.fcp_w"].t() + p[f"{i}.fcp_b"]
        for layer, pos in patch_resid:
            if layer == i:
                x = x.clone()
                x[pos] = source["resid"][i][pos]
        cache["resid"].append(x)
        cache["lens"].append(final(x) @ head.t())
    cache["logits"] = final(x) @ head.t()
    return cache


def norm_weighted(p, spec, ids, cache):
    """(L, H, T, T): the attention weights times ‖v_j[h] · W_O[:, h]ᵀ‖."""
    L, H = spec["L"], spec["H"]
    T, E = len(ids), p["wte"].shape[1]
    hd = E // H
    x = p["wte"][ids] + p["wpe"][:T]
    out = []
    for i in range(L):
        a = x if spec["attn_only"] else mc.layer_norm(x, p[f"{i}.ln1_w"], p[f"{i}.ln1_b"], spec["eps"])
        v = (a @ p[f"{i}.qkv_w"][2 * E:].t() + p[f"{i}.qkv_b"][2 * E:]).view(T, H, hd).transpose(0, 1)
        wo = p[f"{i}.proj_w"].view(E, H, hd)  # [out, h, d]
        f = torch.einsum("htd,ehd->hte", v, wo)  # (H, T, E)
        out.append(cache["weights"][i] * f.norm(dim=-1).unsqueeze(1))
        x = cache["resid"][i]
    return torch.stack(out)


def metric_logprob(logits):
    return torch.log_softmax(logits[-1].double(), dim=-1)[TARGET].item()


def metric_diff(logits):
    return (logits[-1, TARGET].double() - logits[-1, VS].double()).item()


def write(out, spec):
    torch.manual_seed(spec["seed"])
    p = mc.random_params(spec["seed"], spec["E"], spec["L"], spec["P"], mc.VOCAB, spec["tied"])
    if not spec["qkv_bias"]:
        for i in range(spec["L"]):
            p[f"{i}.qkv_b"] = torch.zeros(3 * spec["E"])
    folder = os.path.join(out, spec["name"])
    os.makedirs(os.path.join(folder, "reference"), exist_ok=True)
    E, H, L, P = spec["E"], spec["H"], spec["L"], spec["P"]
    if spec["layout"] == "hf":
        state = mc.hf_state(p, L)
        config = {"n_layer": L, "n_head": H, "n_embd": E, "n_positions": P, "vocab_size": mc.VOCAB,
                  "layer_norm_epsilon": spec["eps"], "model_type": "gpt2"}
    else:
        state = mc.book_state(p, L, spec["qkv_bias"])
        if spec["attn_only"]:  # no norms, no MLP: only the attention's weights
            state = {k: v for k, v in state.items() if ".att." in k or k in ("tok_emb.weight", "pos_emb.weight", "out_head.weight")}
        config = {"vocab_size": mc.VOCAB, "context_length": P, "emb_dim": E, "n_heads": H, "n_layers": L,
                  "drop_rate": 0.0, "qkv_bias": spec["qkv_bias"], "attn_only": spec["attn_only"]}
    mc.save_safetensors(state, os.path.join(folder, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    mc.write_tokenizer(folder)

    clean = forward(p, spec, CLEAN)
    corrupt = forward(p, spec, CORRUPT)
    t = {"clean.lens": torch.stack(clean["lens"]), "clean.logits": clean["logits"],
         "clean.norm_weighted": norm_weighted(p, spec, CLEAN, clean)}
    for n, (heads, mode) in enumerate(ABLATIONS):
        c = forward(p, spec, CLEAN, ablate=heads, mode=mode)
        t[f"ablate{n}.weights"] = torch.stack(c["weights"])
        t[f"ablate{n}.logits"] = c["logits"]
    base = metric_logprob(clean["logits"])
    t["sweep"] = torch.tensor([[metric_logprob(forward(p, spec, CLEAN, ablate=[[l, h]])["logits"]) - base
                                for h in range(H)] for l in range(L)])
    good, bad = metric_diff(clean["logits"]), metric_diff(corrupt["logits"])

    def effect(**kw):
        return (metric_diff(forward(p, spec, CORRUPT, source=clean, **kw)["logits"]) - bad) / (good - bad)
    t["patch_head"] = torch.tensor([[effect(patch_heads=[(l, h)]) for h in range(H)] for l in range(L)])
    t["patch_resid"] = torch.tensor([[effect(patch_resid=[(l, i)]) for i in range(len(CLEAN))] for l in range(L)])
    t = {k: v.float().contiguous() for k, v in t.items()}
    mc.save_safetensors(t, os.path.join(folder, "reference", "interventions.safetensors"))
    return {"name": spec["name"], "layout": spec["layout"], "attn_only": spec["attn_only"]}


def write_manifest(out, entries):
    """OUT/manifest.json: the checkpoints written and the cases every reference holds."""
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"checkpoints": entries, "clean": CLEAN, "corrupt": CORRUPT, "target": TARGET, "vs": VS,
                   "ablations": [{"heads": h, "mode": m} for h, m in ABLATIONS]}, f, indent=1)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    write_manifest(out, [write(out, spec) for spec in CHECKPOINTS])
    return 0


if __name__ == "__main__":
    sys.exit(main())
