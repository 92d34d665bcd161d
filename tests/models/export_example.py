#!/usr/bin/python3
"""scripts/export_for_mhaviz.py as a reader uses it, for the tests (fixture gpt_exports).

    export_example.py OUT

Builds the book's GPTModel (chapter 4's classes, written as the book writes them) with
torch.manual_seed(123), then writes into OUT:
  book/          export_book(model, config): the notebook route, with reference/ holding the
                 module's own forward (input.json, expected.safetensors as make_checkpoints.py)
  hf/            the same weights renamed to a GPT2LMHeadModel state_dict (transformer. prefix,
                 Conv1D [in, out], attn.bias mask buffers, lm_head tied to wte) via export_hf
  cli_f16/       the command line: torch.save(state_dict) then export_for_mhaviz.py --dtype f16
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
sys.path.insert(0, HERE)
from export_for_mhaviz import export_book, export_hf, save_safetensors  # noqa: E402
from make_checkpoints import TOKEN_IDS, VOCAB, write_tokenizer  # noqa: E402

CONFIG = {"vocab_size": VOCAB, "context_length": 16, "emb_dim": 48, "n_heads": 3, "n_layers": 2,
          "drop_rate": 0.1, "qkv_bias": True}


# [SECTION] the book's GPTModel (chapter 4)

class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift


class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]), GELU(),
                                    nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]))

    def forward(self, x):
        return self.layers(x)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        self.last_weights = None

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        self.last_weights = attn_weights  # kept for the reference file
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context)


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(cfg["emb_dim"], cfg["emb_dim"], cfg["context_length"], cfg["drop_rate"],
                                      cfg["n_heads"], cfg["qkv_bias"])
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        x = x + self.drop_shortcut(self.att(self.norm1(x)))
        return x + self.drop_shortcut(self.ff(self.norm2(x)))


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        _, seq_len = in_idx.shape
        x = self.tok_emb(in_idx) + self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = self.trf_blocks(self.drop_emb(x))
        return self.out_head(self.final_norm(x))


# [SECTION] the same weights as a Hugging Face GPT2LMHeadModel state_dict

def as_hf_state(model, cfg):
    sd = model.state_dict()
    P = cfg["context_length"]
    s = {"transformer.wte.weight": sd["tok_emb.weight"], "transformer.wpe.weight": sd["pos_emb.weight"]}
    for i in range(cfg["n_layers"]):
        t, h = f"trf_blocks.{i}.", f"transformer.h.{i}."
        qkv_w = torch.cat([sd[t + f"att.{n}.weight"] for n in ("W_query", "W_key", "W_value")])
        qkv_b = torch.cat([sd[t + f"att.{n}.bias"] for n in ("W_query", "W_key", "W_value")])
        s.update({
            h + "ln_1.weight": sd[t + "norm1.scale"], h + "ln_1.bias": sd[t + "norm1.shift"],
            h + "attn.bias": torch.tril(torch.ones(P, P, dtype=torch.uint8)).view(1, 1, P, P),
            h + "attn.masked_bias": torch.tensor(-1e4),
            h + "attn.c_attn.weight": qkv_w.t(), h + "attn.c_attn.bias": qkv_b,
            h + "attn.c_proj.weight": sd[t + "att.out_proj.weight"].t(), h + "attn.c_proj.bias": sd[t + "att.out_proj.bias"],
            h + "ln_2.weight": sd[t + "norm2.scale"], h + "ln_2.bias": sd[t + "norm2.shift"],
            h + "mlp.c_fc.weight": sd[t + "ff.layers.0.weight"].t(), h + "mlp.c_fc.bias": sd[t + "ff.layers.0.bias"],
            h + "mlp.c_proj.weight": sd[t + "ff.layers.2.weight"].t(), h + "mlp.c_proj.bias": sd[t + "ff.layers.2.bias"],
        })
    s["transformer.ln_f.weight"] = sd["final_norm.scale"]
    s["transformer.ln_f.bias"] = sd["final_norm.shift"]
    s["lm_head.weight"] = s["transformer.wte.weight"]  # tied, as GPT2LMHeadModel's state_dict has it
    config = {"n_layer": cfg["n_layers"], "n_head": cfg["n_heads"], "n_embd": cfg["emb_dim"],
              "n_positions": P, "n_ctx": P, "vocab_size": cfg["vocab_size"], "layer_norm_epsilon": 1e-5,
              "activation_function": "gelu_new", "model_type": "gpt2"}
    return s, config


def main():
    out = sys.argv[1]
    torch.manual_seed(123)
    model = GPTModel(CONFIG)
    with torch.no_grad():  # the book's later chapters tie the head for GPT-2 weights; so do we here
        model.out_head.weight = model.tok_emb.weight
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)  # LayerNorm not exactly 1/0, biases not 0
    model.eval()

    book = os.path.join(out, "book")
    export_book(model, CONFIG, book)
    write_tokenizer(book)
    os.makedirs(os.path.join(book, "reference"), exist_ok=True)
    with torch.no_grad():
        logits = model(torch.tensor([TOKEN_IDS]))[0]
    expected = {f"layers.{i}.attn_weights": b.att.last_weights.contiguous() for i, b in enumerate(model.trf_blocks)}
    expected["logits"] = logits.contiguous()
    expected["logits_last"] = logits[-1].contiguous()
    save_safetensors(expected, os.path.join(book, "reference", "expected.safetensors"))
    with open(os.path.join(book, "reference", "input.json"), "w") as f:
        json.dump({"token_ids": TOKEN_IDS}, f)

    state, hf_config = as_hf_state(model, CONFIG)
    export_hf(state, os.path.join(out, "hf"), hf_config)
    write_tokenizer(os.path.join(out, "hf"))

    os.makedirs(out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(out, "book_state.pth"))
    with open(os.path.join(out, "book_config.json"), "w") as f:
        json.dump(CONFIG, f)
    subprocess.run([sys.executable, os.path.join(SCRIPTS, "export_for_mhaviz.py"), os.path.join(out, "book_state.pth"),
                    os.path.join(out, "book_config.json"), os.path.join(out, "cli_f16"), "--dtype", "f16"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
