#!/usr/bin/python3
"""Interventions on small Qwen3, Qwen2, Gemma 3 and Llama checkpoints (Hugging Face layout), computed in
float64 by a hooked forward over the modules of hf_reference.py.

    make_hf_interventions.py OUT

Writes one folder per checkpoint in OUT, as make_modern_checkpoints.py writes them (config.json,
model.safetensors or model-0000K-of-0000N.safetensors shards with their index, no tokenizer):

  qwen3_tied      Qwen3, QK-norm, tied head, F32, one file
  gemma3_sliding  Gemma 3, a 4-token window on layers 0 and 1, layer 2 full, tied, F32, one file
  qwen2_bias      Qwen2, q/k/v biases, untied head, BF16, two shards
  llama_mqa_bias  Llama, one K/V head for four query heads, q/k/v/o biases, linear RoPE
                  scaling, untied, F16, one file

and OUT/manifest.json listing them (name, model_type) with the cases of make_interventions.py
(clean, corrupt, target, vs, ablations). Each folder's reference/interventions.safetensors holds,
all F32 of float64 values computed on the values as stored (BF16- or F16-rounded):

  clean.lens           (L, T, V) logit lens: final norm + LM head on the residual after block l
  clean.logits         (T, V) the model's logits
  clean.norm_weighted  (L, H, T, T) α_ij · ‖W_O[:, h] v_j‖ (Kobayashi et al. 2020), v of K/V head
                       h // (H / G), no o_proj bias
  ablate{i}.weights    (L, H, T, T) attention weights with case i's heads ablated
  ablate{i}.logits     (T, V) logits of that run
  sweep                (L, H) log p(target) at the last position with each head zero-ablated
                       alone, minus the clean run's
  patch_head           (L, H) patching a head's context (before o_proj) from clean into corrupt,
                       normalised (logit difference target − vs): 1 = restored, 0 = no effect
  patch_resid          (L, T) the same for the residual after block l at position t

A head's context is softmax(q kᵀ) v of that query head, before the heads are merged and before
o_proj; "zero" ablation sets it to 0, "mean" to its mean over the positions of the same run.

Checks run every time: the hooked forward equals DecoderModel's (logits and attention weights),
the last lens layer is the logits, an empty ablation changes nothing, patching the residual before
the changed token does nothing and at the last block's last position restores everything, Gemma's
sliding layers give no weight beyond the window, and clean and corrupt differ in the metric.
A second run with the same OUT rewrites everything.

Needs torch and the standard library.
"""
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from export_for_mhaviz import save_safetensors  # noqa: E402
from hf_reference import DecoderModel, apply_rope, load_hf_state, rope_tables  # noqa: E402
import make_interventions as mi  # noqa: E402
from make_interventions import ABLATIONS, CLEAN, CORRUPT, metric_diff, metric_logprob  # noqa: E402
from make_modern_checkpoints import base, random_state, rounded, write_json, write_weights  # noqa: E402

FIRST_CHANGED = next(i for i, (a, b) in enumerate(zip(CLEAN, CORRUPT)) if a != b)
CHECKPOINTS = [
    dict(name="qwen3_tied", dtype="F32", shards=1, seed=21, sliding=[False, False, False],
         config=base("qwen3", architectures=["Qwen3ForCausalLM"], head_dim=16, rope_theta=1000000.0,
                     tie_word_embeddings=True, attention_bias=False, use_sliding_window=False, sliding_window=None)),
    # Layers 0 and 1 slide over 4 keys, layer 2 sees everything: with T = 10 the window cuts.
    dict(name="gemma3_sliding", dtype="F32", shards=1, seed=22, sliding=[True, True, False],
         config=base("gemma3_text", architectures=["Gemma3ForCausalLM"], head_dim=16, query_pre_attn_scalar=24,
                     sliding_window=4, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                     rope_theta=1000000.0, rope_local_base_freq=10000.0, hidden_activation="gelu_pytorch_tanh",
                     tie_word_embeddings=True, final_logit_softcapping=None, attn_logit_softcapping=None,
                     rope_scaling=None, bos_token_id=2, eos_token_id=1, pad_token_id=0)),
    dict(name="qwen2_bias", dtype="BF16", shards=2, seed=23, sliding=[False, False, False],
         config=base("qwen2", architectures=["Qwen2ForCausalLM"], rope_theta=1000000.0, tie_word_embeddings=False,
                     torch_dtype="bfloat16")),
    # One K/V head for four query heads (MQA), q/k/v/o biases (o_proj's is added after an
    # ablated head's zeros), linear RoPE scaling, F16, untied.
    dict(name="llama_mqa_bias", dtype="F16", shards=1, seed=24, sliding=[False, False, False],
         config=base("llama", architectures=["LlamaForCausalLM"], num_key_value_heads=1, head_dim=32,
                     attention_bias=True, rope_theta=500000.0, rope_scaling={"factor": 4.0, "rope_type": "linear"},
                     tie_word_embeddings=False, torch_dtype="float16")),
]
DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


# [SECTION] the hooked forward

def forward(model, ids, ablate=None, mode="zero", patch_heads=(), patch_resid=(), source=None):
    """The forward of DecoderModel (batch 1) written out over its submodules, so that the
    per-head context and the residual can be read and replaced.
    ids: T ids -> a cache: weights [L] (H, T, T), ctx [L] (H, T, hd), v [L] (H, T, hd) (the value
    vector each query head reads), resid [L] (T, C), lens [L] (T, V), logits (T, V).
    ablate: [[l, h]] with mode "zero" or "mean"; patch_heads [(l, h)] and patch_resid [(l, pos)]
    read source's cache."""
    a = model.a
    T = len(ids)
    ids = torch.tensor([ids])
    x = model.tok_emb(ids)[0]
    if a["gemma"]:
        x = x * (a["emb_dim"] ** 0.5)
    full, local = model.masks(T, ids.device)
    tables = {s: rope_tables(a["rope_local" if s else "rope_global"], a["head_dim"], T, x.dtype) for s in (False, True)}
    cache = {"weights": [], "ctx": [], "v": [], "resid": [], "lens": []}
    for i, block in enumerate(model.trf_blocks):
        att = block.att
        H, G, hd = att.H, att.K, att.hd
        cos, sin = tables[block.sliding]
        h_in = block.norm1(x)
        # (1, heads, T, hd): apply_rope reads T from dimension 2.
        q = att.W_query(h_in).view(1, T, H, hd).transpose(1, 2)
        k = att.W_key(h_in).view(1, T, G, hd).transpose(1, 2)
        v = att.W_value(h_in).view(1, T, G, hd).transpose(1, 2)
        if att.q_norm is not None:
            q, k = att.q_norm(q), att.k_norm(k)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k = k.repeat_interleave(att.group, dim=1)[0]  # query head h reads K/V head h // group
        v = v.repeat_interleave(att.group, dim=1)[0]
        scores = (q[0] * att.scaling) @ k.transpose(1, 2)
        w = torch.softmax(scores.masked_fill(local if block.sliding else full, -torch.inf), dim=-1)
        ctx = w @ v  # (H, T, hd)
        mi.edit_context(ctx, i, ablate, mode, patch_heads, source)
        cache["weights"].append(w)
        cache["ctx"].append(ctx.clone())
        cache["v"].append(v)
        attn = att.out_proj(ctx.transpose(0, 1).reshape(T, H * hd))
        if block.gemma:
            x = x + block.norm2(attn)
            x = x + block.norm4(block.ff(block.norm3(x)))
        else:
            x = x + attn
            x = x + block.ff(block.norm2(x))
        for layer, pos in patch_resid:
            if layer == i:
                x = x.clone()
                x[pos] = source["resid"][i][pos]
        cache["resid"].append(x)
        cache["lens"].append(model.out_head(model.final_norm(x)))
    cache["logits"] = model.out_head(model.final_norm(x))
    return cache


def norm_weighted(model, cache):
    """(L, H, T, T): α_ij · ‖W_O[:, h·hd:(h+1)·hd] v_j‖, without o_proj's bias (it is not a
    contribution of token j). Masked cells have α = 0 exactly, so they stay 0."""
    out = []
    for i, block in enumerate(model.trf_blocks):
        att = block.att
        wo = att.out_proj.weight.view(-1, att.H, att.hd)  # [C, h, d]
        f = torch.einsum("htd,chd->htc", cache["v"][i], wo)  # (H, T, C)
        out.append(cache["weights"][i] * f.norm(dim=-1).unsqueeze(1))
    return torch.stack(out)


# [SECTION] one checkpoint

def write(out, spec):
    folder = os.path.join(out, spec["name"])
    shutil.rmtree(folder, ignore_errors=True)  # a second run rewrites; no stale shard survives
    os.makedirs(os.path.join(folder, "reference"))
    config, dtype = spec["config"], DTYPES[spec["dtype"]]
    state = random_state(config, spec["seed"])
    write_weights(folder, state, dtype, spec["shards"])
    write_json(os.path.join(folder, "config.json"), config)
    # The reference runs on what the file holds (BF16-rounded), in float64.
    model = load_hf_state(DecoderModel(config).double(), rounded(state, dtype))
    a, name = model.a, spec["name"]
    L, H, T = a["n_layers"], a["n_heads"], len(CLEAN)
    assert a["sliding"] == spec["sliding"], f"{name}: sliding layers {a['sliding']}, not {spec['sliding']}"

    with torch.no_grad():
        clean = forward(model, CLEAN)
        corrupt = forward(model, CORRUPT)
        # The hooked forward is DecoderModel's forward, only written out.
        for ids, run in ((CLEAN, clean), (CORRUPT, corrupt)):
            logits, weights = model(torch.tensor([ids]))
            assert torch.allclose(run["logits"], logits[0], rtol=0, atol=1e-10), f"{name}: hooked logits differ"
            for i in range(L):
                assert torch.allclose(run["weights"][i], weights[i][0], rtol=0, atol=1e-10), f"{name}: layer {i} weights differ"
        assert torch.allclose(clean["lens"][-1], clean["logits"], rtol=0, atol=1e-12), f"{name}: last lens layer is not the logits"
        assert torch.equal(forward(model, CLEAN, ablate=[])["logits"], clean["logits"]), f"{name}: an empty ablation changed the logits"

        t = {"clean.lens": torch.stack(clean["lens"]), "clean.logits": clean["logits"],
             "clean.norm_weighted": norm_weighted(model, clean)}
        runs = [clean]
        for n, (heads, mode) in enumerate(ABLATIONS):
            c = forward(model, CLEAN, ablate=heads, mode=mode)
            runs.append(c)
            t[f"ablate{n}.weights"] = torch.stack(c["weights"])
            t[f"ablate{n}.logits"] = c["logits"]
        for i in range(L):
            if a["sliding"][i]:
                far = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-a["window"])  # i - j >= window
                for c in runs:
                    assert torch.all(c["weights"][i][:, far] == 0), f"{name}: layer {i} weighs keys beyond the window"

        base_lp = metric_logprob(clean["logits"])
        t["sweep"] = torch.tensor([[metric_logprob(forward(model, CLEAN, ablate=[[l, h]])["logits"]) - base_lp
                                    for h in range(H)] for l in range(L)], dtype=torch.float64)
        good, bad = metric_diff(clean["logits"]), metric_diff(corrupt["logits"])
        assert good != bad, f"{name}: clean and corrupt give the same metric: pick another seed"

        def effect(**kw):
            return (metric_diff(forward(model, CORRUPT, source=clean, **kw)["logits"]) - bad) / (good - bad)
        t["patch_head"] = torch.tensor([[effect(patch_heads=[(l, h)]) for h in range(H)] for l in range(L)], dtype=torch.float64)
        pr = t["patch_resid"] = torch.tensor([[effect(patch_resid=[(l, p)]) for p in range(T)] for l in range(L)],
                                             dtype=torch.float64)
        # After the last block, the last row is all the logits[-1] read: patching it restores.
        assert abs(pr[L - 1, T - 1].item() - 1) <= 1e-9, f"{name}: patch_resid[L-1][T-1] = {pr[L - 1, T - 1].item()}"
        # Rows before the first changed token are the same in both runs (causal attention).
        assert torch.all(pr[:, :FIRST_CHANGED] == 0), f"{name}: patching an unchanged row had an effect"

    t = {k: v.to(torch.float32).contiguous() for k, v in t.items()}
    save_safetensors(t, os.path.join(folder, "reference", "interventions.safetensors"))
    return {"name": name, "model_type": config["model_type"]}


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    mi.write_manifest(out, [write(out, spec) for spec in CHECKPOINTS])
    return 0


if __name__ == "__main__":
    sys.exit(main())
