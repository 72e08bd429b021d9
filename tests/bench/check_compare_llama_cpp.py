#!/usr/bin/env python3
"""bench/compare_llama_cpp.py's own parts, without llama.cpp: the files it makes and the
bytes it says a decoded token must read (the denominator of both sides' "% of
bandwidth"), on a small model.

A Llama of hidden 256, ffn 512, 2 layers, 4 heads / 2 KV heads, vocab 32000 (every
matrix row a whole number of 256-element K-quant blocks) is written by the script's
write_hf_folder, converted by `headwise convert` to F32 and Q4_K_M GGUF files, and:
  - the F32 file's tensor bytes as the script's GGUF reader counts them equal 4 x the
    elements of the safetensors tensors (an independent count: the folder's header);
  - the Q4_K_M file's equal the total `headwise convert` reports (MB, 0.05 MB rounding)
    and are smaller than the F32 count;
  - decode_bytes = all tensors but token_embd + one token_embd row + the f16 K/V cache of
    2 layers x 2 KV heads x 64 at the mean context P + (G+1)/2, computed here by hand.
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--headwise", required=True)
ap.add_argument("--shared", required=True)
ap.add_argument("--workdir", required=True)
a = ap.parse_args()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
try:
    import numpy  # noqa: F401
except ImportError:
    print("FAIL: numpy is not importable by %s (install python3-numpy)" % sys.executable)
    sys.exit(1)
import compare_llama_cpp as c  # noqa: E402

os.makedirs(a.workdir, exist_ok=True)
vocab = os.path.join(a.shared, "vocab", "ggml-vocab-llama-spm.gguf")
dims = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2}
hf = os.path.join(a.workdir, "hf")
c.write_hf_folder(dims, hf, seed=5)
f32, q4 = os.path.join(a.workdir, "f32.gguf"), os.path.join(a.workdir, "q4_k_m.gguf")
subprocess.run([a.headwise, "convert", hf, "--vocab", vocab, "-o", f32], check=True)
p = subprocess.run([a.headwise, "convert", f32, "--weights", "q4_k_m", "-o", q4], check=True,
                   stderr=subprocess.PIPE, text=True)
failures = []

with open(os.path.join(hf, "model.safetensors"), "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
elements = sum(math.prod(e["shape"]) for e in header.values())
meta, tensors = c.gguf_summary(f32)
f32_bytes = sum(b for _, b, _ in tensors.values())
if f32_bytes != 4 * elements or len(tensors) != len(header):
    failures.append(f"F32: {len(tensors)} tensors of {f32_bytes} bytes, the folder has {len(header)} of "
                    f"{4 * elements}")

reported = float(re.search(r"weights: ([\d.]+) MB from", p.stderr).group(1))
_, q_tensors = c.gguf_summary(q4)
q_bytes = sum(b for _, b, _ in q_tensors.values())
if abs(q_bytes / 1e6 - reported) > 0.051 or q_bytes >= f32_bytes:
    failures.append(f"Q4_K_M: {q_bytes} bytes counted, headwise convert reports {reported} MB")
if {t for t, _, _ in q_tensors.values()} - {0, 12, 14}:  # F32 norms, Q4_K, Q6_K
    failures.append(f"Q4_K_M: unexpected types {sorted({t for t, _, _ in q_tensors.values()})}")

P, G = 512, 128
need, weights, total = c.decode_bytes(q4, P, G)
embd = q_tensors["token_embd.weight"]
expect_w = q_bytes - embd[1] + embd[1] // 32000
expect = expect_w + 2 * 2 * 2 * 64 * 2 * (P + (G + 1) / 2)
if (weights, total) != (expect_w, q_bytes) or abs(need - expect) > 1e-6:
    failures.append(f"decode_bytes: {need} (weights {weights}, total {total}), expected {expect} "
                    f"(weights {expect_w}, total {q_bytes})")
print(f"F32 {f32_bytes} bytes, Q4_K_M {q_bytes} bytes, one decoded token at depth {P}: {need / 2**20:.2f} MiB")
if failures:
    print("FAIL: " + "; ".join(failures))
    sys.exit(1)
print("PASS")
