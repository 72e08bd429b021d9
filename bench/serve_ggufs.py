#!/usr/bin/env python3
"""The F32 GGUF files serve_bench.mjs's llama-server comparison loads into both servers:
seeded random weights in the shapes of headwise's synthetic models, converted by
`headwise convert` with a real vocabulary so that llama.cpp loads them too.

  llama-134m  compare_llama_cpp.py's file (same shape, seed and path, so the two
              benchmarks share it): /tmp/hw_compare_llama_cpp/llama-134m/llama-134m-f32.gguf
  gpt2-small  GPT-2 small (768 wide, 12 layers, 12 heads, 1024 positions, 50257 tokens,
              gelu_new, tied classifier), the GPT-2 vocabulary; its HF folder is written
              by tests/e2e/arch_models.py: /tmp/hw_compare_llama_cpp/gpt2-small/gpt2-small-f32.gguf

usage: serve_ggufs.py --headwise BIN NAME...   prints NAME=PATH per model, writing what is
missing (~0.5 GB each, ~20 s).
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from bench_common import resolve_headwise  # noqa: E402

WORK = "/tmp/hw_compare_llama_cpp"
VOCAB = os.path.join(ROOT, "..", "shared", "vocab")
GPT2_SMALL = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12,
              "n_head": 12, "n_positions": 1024, "vocab_size": 50257, "layer_norm_epsilon": 1e-5,
              "activation_function": "gelu_new", "eos_token_id": 50256}


def make(name, headwise):
    path = os.path.join(WORK, name, f"{name}-f32.gguf")
    if os.path.exists(path):
        return path
    hf = os.path.join(WORK, name, "hf")
    if name == "llama-134m":
        import compare_llama_cpp as c
        c.write_hf_folder(c.SHAPES[name], hf, seed=3)
        vocab = "ggml-vocab-llama-spm.gguf"
    else:
        import arch_models
        arch_models.make_folder(GPT2_SMALL, hf, seed=3)
        vocab = "ggml-vocab-gpt-2.gguf"
    tmp = path[:-len(".gguf")] + ".part.gguf"  # convert writes GGUF to a .gguf name
    subprocess.run([headwise, "convert", hf, "--vocab", os.path.join(VOCAB, vocab), "-o", tmp], check=True)
    os.replace(tmp, path)
    shutil.rmtree(hf)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headwise", required=True)
    ap.add_argument("names", nargs="+", choices=["llama-134m", "gpt2-small"])
    a = ap.parse_args()
    resolve_headwise(ap, a)
    for n in a.names:
        print(f"{n}={make(n, a.headwise)}", flush=True)


if __name__ == "__main__":
    main()
