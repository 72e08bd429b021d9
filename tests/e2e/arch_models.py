#!/usr/bin/env python3
"""Small random-weight Hugging Face checkpoints of every supported architecture, and an
independent float64 PyTorch forward pass for each, written from the architectures'
published definitions (the Hugging Face `modeling_*.py` files and the GPT-2 paper's
code), not from headwise's C++:

  llama / mistral (LlamaForCausalLM, MistralForCausalLM):
      x = embed[ids]
      per layer: h = rmsnorm(x) * w_in          rmsnorm(x) = x / sqrt(mean(x^2) + eps)
                 q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)   (biases: qwen2)
                 qwen3: q, k = rmsnorm(q_head) * q_norm, rmsnorm(k_head) * k_norm per head
                 RoPE, rotate_half: q*cos + rotate_half(q)*sin with cos/sin of
                      pos * inv_freq repeated twice (pairs i, i + head_dim/2);
                      inv_freq = theta^(-2i/head_dim), Llama 3 scaling applied to it
                 causal softmax(q k^T / sqrt(head_dim)) v, GQA: head h reads kv head
                      h // (n_heads / n_kv_heads)
                 x += attn Wo^T;  h = rmsnorm(x) * w_post;  x += down(silu(gate h) * up h)
      logits = rmsnorm(x) * w_norm  lm_head^T   (lm_head = embed when tied)
  gpt2 (GPT2LMHeadModel): x = wte[ids] + wpe[pos]; per layer LayerNorm, Conv1D
      c_attn (x W + b, W stored [in, out]), attention, c_proj, residual, LayerNorm, c_fc,
      gelu_new = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), c_proj, residual;
      ln_f; logits = x wte^T.

Weights are scaled so the next-token distributions are peaked (a flat distribution
would hide errors): embeddings ~N(0, 1), projections ~N(0, 1/fan_in), norm gains
1 + N(0, 0.1²), biases N(0, 0.1²).

Module use: MODELS (name → config), make(name, dir, seed), forward(dir, ids).
"""
import json
import math
import os
import struct

import numpy as np

LLAMA_VOCAB = 32000   # ../shared/vocab/ggml-vocab-llama-spm.gguf
GPT2_VOCAB = 50257    # ../shared/vocab/ggml-vocab-gpt-2.gguf

# name → (config.json, vocabulary file for the GGUF, number of shards)
MODELS = {
    "llama": ({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
               "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 4, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
               "rope_theta": 10000.0, "vocab_size": LLAMA_VOCAB, "hidden_act": "silu",
               "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2},
              "ggml-vocab-llama-spm.gguf", 1),
    # Llama 3: GQA, rope_theta 500000, "llama3" rope scaling (all three frequency bands
    # occur at head_dim 16 with original_max_position_embeddings 64), tied classifier,
    # sharded weights.
    "llama3": ({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
                "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
                "rope_theta": 500000.0, "vocab_size": LLAMA_VOCAB, "hidden_act": "silu",
                "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": [2, 0],
                "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64}},
               "ggml-vocab-llama-spm.gguf", 3),
    # Mistral: GQA; a sliding window of 128 < 256 positions caps the context at 128.
    "mistral": ({"model_type": "mistral", "architectures": ["MistralForCausalLM"], "hidden_size": 64,
                 "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 8,
                 "num_key_value_heads": 2, "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
                 "rope_theta": 1000000.0, "vocab_size": LLAMA_VOCAB, "hidden_act": "silu",
                 "tie_word_embeddings": False, "sliding_window": 128, "eos_token_id": 2},
                "ggml-vocab-llama-spm.gguf", 1),
    "qwen2": ({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
               "rope_theta": 1000000.0, "vocab_size": GPT2_VOCAB, "hidden_act": "silu",
               "tie_word_embeddings": True, "use_sliding_window": False, "eos_token_id": 50256},
              "ggml-vocab-gpt-2.gguf", 1),
    # Qwen3: head_dim 32 with 4 heads of a 64-wide stream (head_dim × heads ≠ d_model).
    "qwen3": ({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64,
               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 256,
               "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "vocab_size": GPT2_VOCAB,
               "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": False,
               "eos_token_id": 50256},
              "ggml-vocab-gpt-2.gguf", 2),
    "gpt2": ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 64, "n_layer": 2,
              "n_head": 4, "n_positions": 256, "vocab_size": GPT2_VOCAB, "layer_norm_epsilon": 1e-5,
              "activation_function": "gelu_new", "eos_token_id": 50256},
             "ggml-vocab-gpt-2.gguf", 1),
}

GENERATION_CONFIG = {"do_sample": True, "temperature": 0.6, "top_p": 0.9}


# ---- writing ------------------------------------------------------------------------

def write_safetensors(path, tensors):
    """tensors: list of (name, float32 ndarray), written F32 in order."""
    header, blobs, at = {}, [], 0
    for name, a in tensors:
        a = np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.tobytes())
        at += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def hf_tensors(cfg, rng):
    """The checkpoint's tensors, HF names, float32."""
    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) / math.sqrt(cols)).astype(np.float32)

    def gain(n):
        return (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    def bias(n):
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    t = []
    if cfg["model_type"] == "gpt2":
        D, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
        F = 4 * D
        t.append(("wte.weight", rng.standard_normal((V, D)).astype(np.float32)))
        t.append(("wpe.weight", (0.5 * rng.standard_normal((P, D))).astype(np.float32)))
        for l in range(cfg["n_layer"]):
            p = f"h.{l}."
            # Conv1D stores [in, out]
            t += [(p + "ln_1.weight", gain(D)), (p + "ln_1.bias", bias(D)),
                  (p + "attn.c_attn.weight", mat(3 * D, D).T.copy()), (p + "attn.c_attn.bias", bias(3 * D)),
                  (p + "attn.c_proj.weight", mat(D, D).T.copy()), (p + "attn.c_proj.bias", bias(D)),
                  (p + "ln_2.weight", gain(D)), (p + "ln_2.bias", bias(D)),
                  (p + "mlp.c_fc.weight", mat(F, D).T.copy()), (p + "mlp.c_fc.bias", bias(F)),
                  (p + "mlp.c_proj.weight", mat(D, F).T.copy()), (p + "mlp.c_proj.bias", bias(D))]
        t += [("ln_f.weight", gain(D)), ("ln_f.bias", bias(D))]
        return t
    D, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H, KV = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim", D // H)
    qkv_bias = cfg["model_type"] == "qwen2"
    t.append(("model.embed_tokens.weight", rng.standard_normal((V, D)).astype(np.float32)))
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        t += [(p + "input_layernorm.weight", gain(D)),
              (p + "self_attn.q_proj.weight", mat(H * hd, D)),
              (p + "self_attn.k_proj.weight", mat(KV * hd, D)),
              (p + "self_attn.v_proj.weight", mat(KV * hd, D))]
        if qkv_bias:
            t += [(p + "self_attn.q_proj.bias", bias(H * hd)), (p + "self_attn.k_proj.bias", bias(KV * hd)),
                  (p + "self_attn.v_proj.bias", bias(KV * hd))]
        if cfg["model_type"] == "qwen3":
            t += [(p + "self_attn.q_norm.weight", gain(hd)), (p + "self_attn.k_norm.weight", gain(hd))]
        t += [(p + "self_attn.o_proj.weight", mat(D, H * hd)),
              (p + "post_attention_layernorm.weight", gain(D)),
              (p + "mlp.gate_proj.weight", mat(F, D)), (p + "mlp.up_proj.weight", mat(F, D)),
              (p + "mlp.down_proj.weight", mat(D, F))]
    t.append(("model.norm.weight", gain(D)))
    if not cfg.get("tie_word_embeddings", False):
        t.append(("lm_head.weight", (4 * mat(V, D)).astype(np.float32)))
    return t


def make(name, out_dir, seed=1):
    """Writes the HF folder for MODELS[name] into out_dir."""
    cfg, _, shards = MODELS[name]
    make_folder(cfg, out_dir, seed, shards)


def make_folder(cfg, out_dir, seed=1, shards=1):
    """Writes an HF folder with random weights for config `cfg` into out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))
    rng = np.random.default_rng(seed)
    tensors = hf_tensors(cfg, rng)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(GENERATION_CONFIG, f)
    if shards == 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
        return
    per = (len(tensors) + shards - 1) // shards
    weight_map = {}
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = tensors[s * per:(s + 1) * per]
        write_safetensors(os.path.join(out_dir, fname), part)
        weight_map.update({n: fname for n, _ in part})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)


# ---- reading back and the float64 forward pass --------------------------------------

def read_safetensors(path):
    """{name: array} of a safetensors file (F32; F16 and I32 too, as GPTQ/AWQ files hold)."""
    kinds = {"F32": "<f4", "F16": "<f2", "I32": "<i4"}
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dt = np.dtype(kinds[e["dtype"]])
        out[name] = np.frombuffer(data, dtype=dt, count=(end - b) // dt.itemsize, offset=8 + n + b).reshape(e["shape"])
    return out


def load(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    weights = {}
    for fname in sorted(os.listdir(folder)):
        if fname.endswith(".safetensors"):
            weights.update(read_safetensors(os.path.join(folder, fname)))
    return cfg, weights


def llama3_inv_freq(inv_freq, rs):
    """transformers' _compute_llama3_parameters."""
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv_freq
    out = inv_freq.clone()
    for i in range(len(inv_freq)):
        w = float(wavelen[i])
        if w < high_wavelen:
            continue
        if w > low_wavelen:
            out[i] = inv_freq[i] / factor
        else:
            smooth = (old / w - low) / (high - low)
            out[i] = (1 - smooth) * inv_freq[i] / factor + smooth * inv_freq[i]
    return out


def forward(folder, ids):
    """float64 logits [len(ids), vocab] of the checkpoint in `folder`."""
    import torch
    cfg, w = load(folder)
    W = {k: torch.from_numpy(np.array(v, dtype=np.float64)) for k, v in w.items()}
    ids = torch.tensor(ids, dtype=torch.long)
    T = len(ids)
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)

    def attend(q, k, v, H, KV):
        # q (T, H, hd), k/v (T, KV, hd)
        hd = q.shape[-1]
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        return torch.einsum("hts,shd->thd", torch.softmax(s, dim=-1), v).reshape(T, H * hd)

    if cfg["model_type"] == "gpt2":
        D, H, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
        hd = D // H
        ln = lambda x, p: torch.nn.functional.layer_norm(x, (D,), W[p + ".weight"], W[p + ".bias"], eps)
        gelu = lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        x = W["wte.weight"][ids] + W["wpe.weight"][:T]
        for l in range(cfg["n_layer"]):
            p = f"h.{l}."
            qkv = ln(x, p + "ln_1") @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
            q, k, v = (t.reshape(T, H, hd) for t in qkv.split(D, dim=1))
            x = x + attend(q, k, v, H, H) @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
            f = gelu(ln(x, p + "ln_2") @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"])
            x = x + f @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
        return (ln(x, "ln_f") @ W["wte.weight"].T).numpy()

    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim", D // H)
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    rs = cfg.get("rope_scaling")
    if rs:
        assert rs.get("rope_type", rs.get("type")) == "llama3"
        inv_freq = llama3_inv_freq(inv_freq, rs)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat([ang, ang], dim=-1)            # (T, hd)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]

    def rotate_half(x):
        return torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], dim=-1)

    def rms(x, g):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g

    def lin(x, p):
        y = x @ W[p + ".weight"].T
        return y + W[p + ".bias"] if p + ".bias" in W else y

    x = W["model.embed_tokens.weight"][ids]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, W[p + "input_layernorm.weight"])
        q = lin(h, p + "self_attn.q_proj").reshape(T, H, hd)
        k = lin(h, p + "self_attn.k_proj").reshape(T, KV, hd)
        v = lin(h, p + "self_attn.v_proj").reshape(T, KV, hd)
        if cfg["model_type"] == "qwen3":
            q = rms(q, W[p + "self_attn.q_norm.weight"])
            k = rms(k, W[p + "self_attn.k_norm.weight"])
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        x = x + lin(attend(q, k, v, H, KV), p + "self_attn.o_proj")
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        g, u = lin(h, p + "mlp.gate_proj"), lin(h, p + "mlp.up_proj")
        x = x + lin(torch.nn.functional.silu(g) * u, p + "mlp.down_proj")
    h = rms(x, W["model.norm.weight"])
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else W["lm_head.weight"]
    return (h @ head.T).numpy()
