#!/usr/bin/env python3
"""A GPT-2-style model with seeded random weights, and its float64 PyTorch forward pass.

Writes model.safetensors (Hugging Face GPT-2 tensor names, fused QKV in Conv1D [in][out]
layout, tied classifier) and model.json (the GPT-2 example of graph/FORMAT.md), and
computes reference logits with plain PyTorch ops, written from the GPT-2 architecture,
not from headwise's C++:

  x = wte[tokens] + wpe[positions]
  per layer:  h = layernorm(x; ln_1);  q, k, v = split(h @ c_attn.weight + c_attn.bias)
              a = causal softmax(q k^T / sqrt(head_dim)) v per head
              x += a @ attn.c_proj.weight + bias
              h = layernorm(x; ln_2);  x += gelu_tanh(h @ c_fc.weight + bias) @ mlp.c_proj.weight + bias
  logits = layernorm(x; ln_f) @ wte^T

safetensors is read and written by hand (8-byte little-endian header length, JSON
header {name: {dtype, shape, data_offsets}}, then the data): there is no Python package.
"""
import json
import math
import struct
from collections import OrderedDict

import numpy as np

# The model of check_gpt2.py: GPT-2 small's width and heads, two layers, small vocab.
CONFIG = dict(vocab_size=1024, d_model=768, n_layers=2, n_heads=12, max_seq_len=128,
              norm_eps=1e-5)

_NP_OF = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I32": "<i4", "I64": "<i8", "U8": "u1"}
_ST_OF = {np.dtype(v).str: k for k, v in _NP_OF.items()}


def write_safetensors(path, tensors, header_edit=None):
    """tensors: ordered {name: numpy array}. header_edit(header) may alter the JSON header
    before it is written (for the load-error checks)."""
    header, blobs, at = OrderedDict(), [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        data = a.tobytes()
        header[name] = {"dtype": _ST_OF[a.dtype.str], "shape": list(a.shape),
                        "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    if header_edit:
        header_edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned, as safetensors does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (copies, native order)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = OrderedDict()
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + end], dtype=_NP_OF[e["dtype"]]).reshape(e["shape"]).copy()
    return out


def make_weights(cfg=CONFIG, seed=1234):
    """Seeded random float32 weights {HF name: numpy array}.

    Matrices and embeddings are N(0, 0.02) like GPT-2's init, except c_attn at 0.08: with
    0.02 the attention scores of a random model are nearly equal and softmax is almost
    uniform, so a wrong mask, scale or head split would hardly move the logits. Biases and
    LayerNorm gains/biases are random too (not 0/1), so a dropped bias or gain shows."""
    import torch
    g = torch.Generator().manual_seed(seed)
    C, V, S = cfg["d_model"], cfg["vocab_size"], cfg["max_seq_len"]
    F = 4 * C

    def normal(*shape, std):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std).float().numpy()

    def gain(n):
        return (1.0 + 0.2 * torch.randn(n, generator=g, dtype=torch.float64)).float().numpy()

    w = OrderedDict()
    w["wte.weight"] = normal(V, C, std=0.02)
    w["wpe.weight"] = normal(S, C, std=0.02)
    for l in range(cfg["n_layers"]):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = gain(C)
        w[p + "ln_1.bias"] = normal(C, std=0.1)
        w[p + "attn.c_attn.weight"] = normal(C, 3 * C, std=0.08)   # Conv1D: [in][out]
        w[p + "attn.c_attn.bias"] = normal(3 * C, std=0.1)
        w[p + "attn.c_proj.weight"] = normal(C, C, std=0.02)
        w[p + "attn.c_proj.bias"] = normal(C, std=0.1)
        w[p + "ln_2.weight"] = gain(C)
        w[p + "ln_2.bias"] = normal(C, std=0.1)
        w[p + "mlp.c_fc.weight"] = normal(C, F, std=0.02)
        w[p + "mlp.c_fc.bias"] = normal(F, std=0.1)
        w[p + "mlp.c_proj.weight"] = normal(F, C, std=0.02)
        w[p + "mlp.c_proj.bias"] = normal(C, std=0.1)
    w["ln_f.weight"] = gain(C)
    w["ln_f.bias"] = normal(C, std=0.1)
    return w


def model_json(cfg=CONFIG, name="gpt2-e2e"):
    """The GPT-2 description of graph/FORMAT.md for this config."""
    C = cfg["d_model"]
    L = "{layer}"
    return {
        "format": "headwise-model/1",
        "name": name,
        "weights": "model.safetensors",
        "settings": {"vocab_size": cfg["vocab_size"], "d_model": C, "n_layers": cfg["n_layers"],
                     "n_heads": cfg["n_heads"], "max_seq_len": cfg["max_seq_len"],
                     "norm_eps": cfg["norm_eps"]},
        "embed": [
            {"op": "embedding", "in": "tokens", "out": "x", "weight": "wte.weight"},
            {"op": "pos_embedding", "in": "x", "out": "x", "weight": "wpe.weight"},
        ],
        "block": [
            {"op": "layernorm", "in": "x", "out": "h", "weight": f"h.{L}.ln_1.weight", "bias": f"h.{L}.ln_1.bias"},
            {"op": "linear", "in": "h", "out": ["q", "k", "v"], "split": [C, C, C], "layout": "in_out",
             "weight": f"h.{L}.attn.c_attn.weight", "bias": f"h.{L}.attn.c_attn.bias"},
            {"op": "attention", "in": ["q", "k", "v"], "out": "a"},
            {"op": "linear", "in": "a", "out": "o", "layout": "in_out",
             "weight": f"h.{L}.attn.c_proj.weight", "bias": f"h.{L}.attn.c_proj.bias"},
            {"op": "add", "in": ["x", "o"], "out": "x"},
            {"op": "layernorm", "in": "x", "out": "h", "weight": f"h.{L}.ln_2.weight", "bias": f"h.{L}.ln_2.bias"},
            {"op": "linear", "in": "h", "out": "f", "layout": "in_out",
             "weight": f"h.{L}.mlp.c_fc.weight", "bias": f"h.{L}.mlp.c_fc.bias"},
            {"op": "gelu", "in": "f", "out": "f", "approximate": "tanh"},
            {"op": "linear", "in": "f", "out": "o", "layout": "in_out",
             "weight": f"h.{L}.mlp.c_proj.weight", "bias": f"h.{L}.mlp.c_proj.bias"},
            {"op": "add", "in": ["x", "o"], "out": "x"},
        ],
        "head": [
            {"op": "layernorm", "in": "x", "out": "h", "weight": "ln_f.weight", "bias": "ln_f.bias"},
            {"op": "logits", "in": "h", "out": "logits", "weight": "wte.weight"},
        ],
    }


def write_model(folder, cfg=CONFIG, seed=1234):
    """Writes folder/model.json and folder/model.safetensors; returns the weights."""
    import os
    os.makedirs(folder, exist_ok=True)
    w = make_weights(cfg, seed)
    write_safetensors(os.path.join(folder, "model.safetensors"), w)
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump(model_json(cfg), f, indent=1)
    return w


def forward(weights, tokens, cfg=CONFIG):
    """Logits (T, vocab), float64, of every position of `tokens`; weights {name: array}."""
    import torch
    import torch.nn.functional as F
    w = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()}
    C, H, eps = cfg["d_model"], cfg["n_heads"], cfg["norm_eps"]
    hd = C // H
    tokens = torch.as_tensor(list(tokens), dtype=torch.long)
    T = tokens.numel()
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)           # True above the diagonal: future
    x = w["wte.weight"][tokens] + w["wpe.weight"][:T]            # (T, C)
    for l in range(cfg["n_layers"]):
        p = f"h.{l}."
        h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]     # (T, 3C)
        q, k, v = (t.reshape(T, H, hd).transpose(0, 1) for t in qkv.split(C, dim=1))  # (H, T, hd)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(hd)                     # (H, T, T)
        scores = scores.masked_fill(mask, float("-inf"))
        a = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(T, C)
        x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        f = F.gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate="tanh")
        x = x + f @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    h = F.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return (h @ w["wte.weight"].T).numpy()
