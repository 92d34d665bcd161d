"""The decoder forward of Qwen3, Qwen2, Llama 3 and Gemma 3 in plain torch, written after the
standalone modules of the book's repository (rasbt/LLMs-from-scratch: pkg/llms_from_scratch/
qwen3.py and llama3.py, ch05/12_gemma3/standalone-gemma3.ipynb), generalised over what the
Hugging Face config.json says, and loading Hugging Face tensor names.

Module by module as the book has them: RMSNorm (Gemma: x·(1 + w)), GroupedQueryAttention
(W_query/W_key/W_value/out_proj, optional q/k/v/o biases, QK-norm before RoPE, split-half
RoPE, K/V heads repeat_interleave'd, scores masked with -inf and scaled by 1/sqrt(head_dim)
or query_pre_attn_scalar^-0.5, sliding-window mask), FeedForward (fc1 = gate, fc2 = up,
fc3 = down; SiLU or tanh-GELU), TransformerBlock (two norms, or Gemma's four) and the model
(embedding, scaled by sqrt(emb_dim) in Gemma; final norm; LM head, tied or not).

Used by make_modern_checkpoints.py (float64 references) and bench_qwen3_torch.py (float32
timing of the Qwen3 forward).
"""
import math

import torch
import torch.nn as nn


# [SECTION] the config.json fields this forward reads, with transformers' defaults

def arch_of(config):
    """config.json (a dict) -> a flat dict of what the forward needs ("gemma3" reads text_config)."""
    mt = config["model_type"]
    c = dict(config["text_config"]) if mt == "gemma3" else dict(config)
    gemma = mt in ("gemma3", "gemma3_text")
    heads = c["num_attention_heads"]
    a = {
        "model_type": mt,
        "gemma": gemma,
        "emb_dim": c["hidden_size"],
        "n_layers": c["num_hidden_layers"],
        "n_heads": heads,
        "n_kv_heads": c.get("num_key_value_heads", heads),
        "hidden_dim": c["intermediate_size"],
        "vocab_size": c["vocab_size"],
        "eps": c.get("rms_norm_eps", 1e-6),
        "qk_norm": mt in ("qwen3", "gemma3", "gemma3_text"),
        "qkv_bias": mt == "qwen2" or c.get("attention_bias", False),
        "o_bias": mt != "qwen2" and c.get("attention_bias", False),
        "tied": c.get("tie_word_embeddings", gemma),
        "act": c.get("hidden_activation" if gemma else "hidden_act", "gelu_pytorch_tanh" if gemma else "silu"),
    }
    a["head_dim"] = c.get("head_dim") or c["hidden_size"] // heads
    a["scaling"] = (c.get("query_pre_attn_scalar", 256) if gemma else a["head_dim"]) ** -0.5
    a["rope_global"] = rope_of(c.get("rope_theta", 1e6 if gemma else 1e4), c.get("rope_scaling"))
    a["rope_local"] = rope_of(c.get("rope_local_base_freq", 1e4), None) if gemma else a["rope_global"]
    n = a["n_layers"]
    window = c.get("sliding_window") or 0
    if not gemma and not c.get("use_sliding_window", False):
        window = 0
    if "layer_types" in c and c["layer_types"] is not None:
        sliding = [t == "sliding_attention" for t in c["layer_types"]]
    elif gemma:
        pattern = c.get("sliding_window_pattern", 6)
        sliding = [(i + 1) % pattern != 0 for i in range(n)]
    else:
        sliding = [i >= c.get("max_window_layers", 28) for i in range(n)]
    a["sliding"] = [s and window > 0 for s in sliding]
    a["window"] = window
    return a


def rope_of(theta, scaling):
    r = {"theta": float(theta), "type": "default"}
    if scaling:
        r.update(scaling)
        r["type"] = scaling.get("rope_type", scaling.get("type", "default"))
    return r


# [SECTION] RoPE (split halves), with Llama 3's and linear frequency scaling

def inv_freq(rope, head_dim, dtype=torch.float64):
    f = 1.0 / (rope["theta"] ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))
    if rope["type"] == "linear":
        f = f / rope["factor"]
    elif rope["type"] == "llama3":
        # As the book's llama3.compute_rope_params: long wavelengths divided by factor, short
        # ones kept, those between interpolated.
        orig, low, high, factor = (rope["original_max_position_embeddings"], rope["low_freq_factor"],
                                   rope["high_freq_factor"], rope["factor"])
        wavelen = 2 * math.pi / f
        scaled = torch.where(wavelen > orig / low, f / factor, f)
        smooth = (orig / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * (f / factor) + smooth * f
        medium = (wavelen <= orig / low) & (wavelen >= orig / high)
        f = torch.where(medium, smoothed, scaled)
    elif rope["type"] != "default":
        raise ValueError(f"rope type {rope['type']}")
    return f


def rope_tables(rope, head_dim, T, dtype):
    angles = torch.arange(T, dtype=dtype).unsqueeze(1) * inv_freq(rope, head_dim, dtype).unsqueeze(0)
    angles = torch.cat([angles, angles], dim=1)  # (T, head_dim)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    """x: (b, heads, T, head_dim)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[: x.shape[2]] + rotated * sin[: x.shape[2]]


# [SECTION] the modules

class RMSNorm(nn.Module):
    def __init__(self, dim, eps, gemma, device=None):
        super().__init__()
        self.eps, self.gemma = eps, gemma
        self.scale = nn.Parameter(torch.zeros(dim, device=device) if gemma else torch.ones(dim, device=device))

    def forward(self, x):
        x_norm = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x_norm * (1.0 + self.scale) if self.gemma else x_norm * self.scale


class GroupedQueryAttention(nn.Module):
    def __init__(self, a, device=None):
        super().__init__()
        E, H, K, hd = a["emb_dim"], a["n_heads"], a["n_kv_heads"], a["head_dim"]
        self.H, self.K, self.hd, self.group = H, K, hd, H // K
        self.W_query = nn.Linear(E, H * hd, bias=a["qkv_bias"], device=device)
        self.W_key = nn.Linear(E, K * hd, bias=a["qkv_bias"], device=device)
        self.W_value = nn.Linear(E, K * hd, bias=a["qkv_bias"], device=device)
        self.out_proj = nn.Linear(H * hd, E, bias=a["o_bias"], device=device)
        self.q_norm = RMSNorm(hd, a["eps"], a["gemma"], device) if a["qk_norm"] else None
        self.k_norm = RMSNorm(hd, a["eps"], a["gemma"], device) if a["qk_norm"] else None
        self.scaling = a["scaling"]

    def forward(self, x, mask, cos, sin):
        b, T, _ = x.shape
        q = self.W_query(x).view(b, T, self.H, self.hd).transpose(1, 2)
        k = self.W_key(x).view(b, T, self.K, self.hd).transpose(1, 2)
        v = self.W_value(x).view(b, T, self.K, self.hd).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # K/V head g serves query heads g·group .. g·group + group - 1.
        k = k.repeat_interleave(self.group, dim=1)
        v = v.repeat_interleave(self.group, dim=1)
        scores = (q * self.scaling) @ k.transpose(2, 3)
        weights = torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1)
        context = (weights @ v).transpose(1, 2).reshape(b, T, self.H * self.hd)
        return self.out_proj(context), weights


class FeedForward(nn.Module):
    def __init__(self, a, device=None):
        super().__init__()
        E, I = a["emb_dim"], a["hidden_dim"]
        self.fc1 = nn.Linear(E, I, bias=False, device=device)  # gate_proj
        self.fc2 = nn.Linear(E, I, bias=False, device=device)  # up_proj
        self.fc3 = nn.Linear(I, E, bias=False, device=device)  # down_proj
        self.gelu = a["act"] in ("gelu_pytorch_tanh", "gelu_new")

    def forward(self, x):
        g = self.fc1(x)
        g = nn.functional.gelu(g, approximate="tanh") if self.gelu else nn.functional.silu(g)
        return self.fc3(g * self.fc2(x))


class TransformerBlock(nn.Module):
    def __init__(self, a, sliding, device=None):
        super().__init__()
        self.gemma, self.sliding = a["gemma"], sliding
        self.att = GroupedQueryAttention(a, device)
        self.ff = FeedForward(a, device)
        self.norm1 = RMSNorm(a["emb_dim"], a["eps"], a["gemma"], device)  # input_layernorm
        self.norm2 = RMSNorm(a["emb_dim"], a["eps"], a["gemma"], device)  # Llama/Qwen: before the MLP; Gemma: after attention
        if self.gemma:
            self.norm3 = RMSNorm(a["emb_dim"], a["eps"], True, device)  # pre_feedforward_layernorm
            self.norm4 = RMSNorm(a["emb_dim"], a["eps"], True, device)  # post_feedforward_layernorm

    def forward(self, x, mask, cos, sin):
        h = self.norm1(x)
        attn, weights = self.att(h, mask, cos, sin)
        # The attention sublayer's input and output (before the residual and Gemma's post-norm):
        # what a layer opened as the lesson's module reads and must give.
        self.attn_in, self.attn_out = h, attn
        if self.gemma:
            x = x + self.norm2(attn)
            return x + self.norm4(self.ff(self.norm3(x))), weights
        x = x + attn
        return x + self.ff(self.norm2(x)), weights


class DecoderModel(nn.Module):
    """Qwen3Model / Llama3Model / Gemma3Model of the book, one class over the four configs."""

    def __init__(self, config, device=None):
        """device "meta": no storage, for weights assigned afterwards (attach_state)."""
        super().__init__()
        a = self.a = arch_of(config)
        self.tok_emb = nn.Embedding(a["vocab_size"], a["emb_dim"], device=device)
        self.trf_blocks = nn.ModuleList([TransformerBlock(a, s, device) for s in a["sliding"]])
        self.final_norm = RMSNorm(a["emb_dim"], a["eps"], a["gemma"], device)
        self.out_head = nn.Linear(a["emb_dim"], a["vocab_size"], bias=False, device=device)

    def masks(self, T, device):
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1)
        # Sliding layers: key j visible to query i iff 0 <= i - j < window.
        far_past = torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=self.a["window"]).T if self.a["window"] else None
        return future, (future | far_past) if far_past is not None else future

    def forward(self, ids):
        """ids: (b, T) -> logits (b, T, vocab), [attention weights (b, n_heads, T, T) per layer]."""
        T = ids.shape[1]
        dtype = self.tok_emb.weight.dtype
        x = self.tok_emb(ids)
        if self.a["gemma"]:
            x = x * (self.a["emb_dim"] ** 0.5)
        full, local = self.masks(T, ids.device)
        tables = {s: rope_tables(self.a["rope_local" if s else "rope_global"], self.a["head_dim"], T, dtype) for s in (False, True)}
        all_weights = []
        for block in self.trf_blocks:
            cos, sin = tables[block.sliding]
            x, w = block(x, local if block.sliding else full, cos, sin)
            all_weights.append(w)
        return self.out_head(self.final_norm(x)), all_weights


# [SECTION] Hugging Face tensor names <-> the modules

def hf_names(a, tied):
    """{HF tensor name: module parameter name}, in the order transformers saves them."""
    m = {"model.embed_tokens.weight": "tok_emb.weight"}
    for i in range(a["n_layers"]):
        p, q = f"model.layers.{i}.", f"trf_blocks.{i}."
        m[p + "input_layernorm.weight"] = q + "norm1.scale"
        for hf, mine in (("q_proj", "W_query"), ("k_proj", "W_key"), ("v_proj", "W_value"), ("o_proj", "out_proj")):
            m[p + f"self_attn.{hf}.weight"] = q + f"att.{mine}.weight"
            if (a["qkv_bias"] and hf != "o_proj") or (a["o_bias"] and hf == "o_proj"):
                m[p + f"self_attn.{hf}.bias"] = q + f"att.{mine}.bias"
        if a["qk_norm"]:
            m[p + "self_attn.q_norm.weight"] = q + "att.q_norm.scale"
            m[p + "self_attn.k_norm.weight"] = q + "att.k_norm.scale"
        m[p + "post_attention_layernorm.weight"] = q + "norm2.scale"
        if a["gemma"]:
            m[p + "pre_feedforward_layernorm.weight"] = q + "norm3.scale"
            m[p + "post_feedforward_layernorm.weight"] = q + "norm4.scale"
        m[p + "mlp.gate_proj.weight"] = q + "ff.fc1.weight"
        m[p + "mlp.up_proj.weight"] = q + "ff.fc2.weight"
        m[p + "mlp.down_proj.weight"] = q + "ff.fc3.weight"
    m["model.norm.weight"] = "final_norm.scale"
    if not tied:
        m["lm_head.weight"] = "out_head.weight"
    return m


def load_hf_state(model, state):
    """state: {HF name: tensor}; the LM head is the embedding when there is no lm_head.weight."""
    names = hf_names(model.a, "lm_head.weight" not in state)
    own = dict(model.named_parameters())
    with torch.no_grad():
        for hf, mine in names.items():
            own[mine].copy_(state[hf])
        if "lm_head.weight" not in state:
            own["out_head.weight"].copy_(state["model.embed_tokens.weight"])
    return model


def attach_state(model, state):
    """Makes the tensors of `state` (HF names) the model's parameters, without copying them
    (a model built on the meta device, weights viewing a memory-mapped file)."""
    pairs = [(hf, mine) for hf, mine in hf_names(model.a, "lm_head.weight" not in state).items()]
    pairs.append(("lm_head.weight" if "lm_head.weight" in state else "model.embed_tokens.weight", "out_head.weight"))
    for hf, mine in pairs:
        *path, leaf = mine.split(".")
        module = model
        for part in path:
            module = getattr(module, part)
        setattr(module, leaf, nn.Parameter(state[hf], requires_grad=False))
    return model
