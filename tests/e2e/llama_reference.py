#!/usr/bin/env python3
"""Independent float64 NumPy oracle for the llama2.c forward pass.

Reads the llama2.c "version 0" checkpoint itself (format: ../shared/models/README.md)
and computes the logits of every position of a token sequence in one causal pass,
written from that README, not from headwise's C++:

  x = embedding[token]
  per layer:  h = rmsnorm(x) * rms_att          rmsnorm: x / sqrt(mean(x^2) + 1e-5)
              q, k, v = wq h, wk h, wv h
              RoPE on q and k: pairs (i, i+1), i even, j = i mod head_size,
                               angle = pos / 10000^(j / head_size)
              causal softmax(q k^T / sqrt(head_size)) v per query head,
                               query head hq reads kv head hq // (n_heads // n_kv_heads)
              x += wo attn
              h = rmsnorm(x) * rms_ffn;  x += w2 (silu(w1 h) * (w3 h))
  logits = wcls rmsnorm(x) * rms_final

Usable as a module (load_checkpoint, forward, greedy) or from the command line:
  llama_reference.py CKPT.bin --tokens 1,2,3 [-o logits.npy]
"""
import argparse
import struct

import numpy as np

RMS_EPS = 1e-5
ROPE_THETA = 10000.0


class Checkpoint:
    """Config and float64 weights of a llama2.c checkpoint."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        (self.dim, self.hidden_dim, self.n_layers, self.n_heads, self.n_kv_heads,
         vocab, self.seq_len) = struct.unpack_from("<7i", data, 0)
        # Negative vocab_size: the classifier has its own matrix at the end of the file.
        self.shared_classifier = vocab > 0
        self.vocab_size = abs(vocab)
        self.head_size = self.dim // self.n_heads
        self.kv_dim = self.head_size * self.n_kv_heads
        floats = np.frombuffer(data, dtype="<f4", offset=7 * 4)
        self._floats, self._at = floats, 0

        L, D, H, V, KV = self.n_layers, self.dim, self.hidden_dim, self.vocab_size, self.kv_dim
        self.tok_embedding = self._take(V, D)
        self.rms_att = self._take(L, D)
        self.wq = self._take(L, D, D)
        self.wk = self._take(L, KV, D)
        self.wv = self._take(L, KV, D)
        self.wo = self._take(L, D, D)
        self.rms_ffn = self._take(L, D)
        self.w1 = self._take(L, H, D)
        self.w2 = self._take(L, D, H)
        self.w3 = self._take(L, H, D)
        self.rms_final = self._take(D)
        # Two legacy RoPE tables (freq_cis_real, freq_cis_imag) nobody reads.
        self._take(self.seq_len * self.head_size // 2)
        self._take(self.seq_len * self.head_size // 2)
        self.wcls = self.tok_embedding if self.shared_classifier else self._take(V, D)
        if self._at != floats.size:
            raise ValueError(f"{path}: {floats.size - self._at} floats left over after the weights "
                             "(not a llama2.c version-0 checkpoint?)")
        del self._floats

    def _take(self, *shape):
        n = int(np.prod(shape))
        if self._at + n > self._floats.size:
            raise ValueError("checkpoint is shorter than its header implies")
        a = self._floats[self._at:self._at + n].astype(np.float64).reshape(shape)
        self._at += n
        return a


def rmsnorm(x, w):
    # x: (T, D), w: (D,)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + RMS_EPS) * w


def rope(x, head_size, positions):
    """Rotate pairs (2i, 2i+1) of x: (T, width), width a multiple of head_size."""
    T, width = x.shape
    i = np.arange(0, width, 2)                 # even feature index
    j = i % head_size                          # its even index within the head
    angle = positions[:, None] / ROPE_THETA ** (j / head_size)[None, :]   # (T, width/2)
    c, s = np.cos(angle), np.sin(angle)
    a, b = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2] = a * c - b * s
    out[:, 1::2] = a * s + b * c
    return out


def silu(x):
    return x / (1.0 + np.exp(-x))


def forward(ck, tokens):
    """Logits (T, vocab) in float64 of every position of `tokens` (positions 0..T-1)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T = tokens.size
    hs, H, KVH = ck.head_size, ck.n_heads, ck.n_kv_heads
    kv_mul = H // KVH
    pos = np.arange(T, dtype=np.float64)
    # Causal mask: position t attends to 0..t.
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    x = ck.tok_embedding[tokens]                                  # (T, D)
    for l in range(ck.n_layers):
        h = rmsnorm(x, ck.rms_att[l])
        q = rope(h @ ck.wq[l].T, hs, pos).reshape(T, H, hs)       # (T, H, hs)
        k = rope(h @ ck.wk[l].T, hs, pos).reshape(T, KVH, hs)     # (T, KVH, hs)
        v = (h @ ck.wv[l].T).reshape(T, KVH, hs)
        kv_of = np.arange(H) // kv_mul                            # query head -> kv head
        k, v = k[:, kv_of], v[:, kv_of]                           # (T, H, hs)
        scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(hs)    # (H, Tq, Tk)
        scores[:, future] = -np.inf
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        attn = np.einsum("hts,shd->thd", p, v).reshape(T, H * hs)
        x = x + attn @ ck.wo[l].T
        h = rmsnorm(x, ck.rms_ffn[l])
        x = x + (silu(h @ ck.w1[l].T) * (h @ ck.w3[l].T)) @ ck.w2[l].T
    return rmsnorm(x, ck.rms_final) @ ck.wcls.T


def greedy(ck, prompt, steps):
    """The sequence llama2.c's greedy generation produces: the prompt, then argmax tokens
    until `steps` positions have been run or BOS (1) is sampled."""
    seq = list(prompt)
    while len(seq) <= min(steps, ck.seq_len):
        nxt = int(np.argmax(forward(ck, seq)[-1]))
        if nxt == 1:
            break
        seq.append(nxt)
    return seq


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("-o", "--output", help="write the logits as a float64 .npy")
    args = ap.parse_args()
    ck = Checkpoint(args.checkpoint)
    logits = forward(ck, [int(t) for t in args.tokens.split(",")])
    if args.output:
        np.save(args.output, logits)
    else:
        np.set_printoptions(precision=6, linewidth=120)
        print(logits)


if __name__ == "__main__":
    main()
