#!/usr/bin/env python3
"""Figures for GGUF files and Hugging Face folders (bench/README.md, "Checkpoints").

Makes a llama-134m-shaped model (d_model 768, 12 layers, 12 heads, d_ff 2048, vocab
32000, context 2048, untied classifier: ~536 MB of F32) with random weights as a
Hugging Face folder (config.json + model.safetensors) and, through the library's GGUF
writer (hw_make_gguf), as a GGUF file, then in one run:

1. load: `headwise run MODEL --tokens 1,2,3 -n 3` per format, R times alternating:
   the load time headwise reports and the process's peak RSS (/usr/bin/time), next to
   the file size;
2. speed: `headwise bench GGUF` and `headwise bench --synthetic llama-134m` (the same
   shape, weights generated in memory) alternating, R times: prefill and decode
   tokens/s medians and ranges, and the ratio GGUF / synthetic.

Usage: checkpoint_figures.py --headwise build/headwise --make-gguf build/tests/e2e/hw_make_gguf
           [--workdir /tmp/hw_ckpt] [--repeat 3] [--threads 2]
Run it under `flock /tmp/bench.lock` on a shared machine.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import arch_models  # noqa: E402

CFG = {"model_type": "llama", "hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 12,
       "num_attention_heads": 12, "num_key_value_heads": 12, "max_position_embeddings": 2048,
       "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": 32000, "hidden_act": "silu",
       "tie_word_embeddings": False, "eos_token_id": 2}


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return p


def med(xs):
    return f"{statistics.median(xs):.3g} (range {min(xs):.3g}-{max(xs):.3g})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headwise", required=True)
    ap.add_argument("--make-gguf", required=True)
    ap.add_argument("--workdir", default="/tmp/hw_ckpt")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench-rounds", type=int, default=3, help="alternating bench rounds")
    ap.add_argument("--bench-args", default="--prompt-len 128 --gen-len 32 --repeat 3",
                    help="arguments of each headwise bench run")
    ap.add_argument("--skip-load", action="store_true", help="only the bench comparison")
    a = ap.parse_args()
    hf = os.path.join(a.workdir, "llama-134m-hf")
    gguf = os.path.join(a.workdir, "llama-134m.gguf")
    if not os.path.exists(gguf):
        arch_models.make_folder(CFG, hf, seed=3)
        run([a.make_gguf, hf, gguf])
    sizes = {"gguf": os.path.getsize(gguf), "hf": os.path.getsize(os.path.join(hf, "model.safetensors"))}

    load = {"gguf": [], "hf": []}
    rss = {"gguf": [], "hf": []}
    for _ in range(0 if a.skip_load else a.repeat):
        for fmt, path in (("gguf", gguf), ("hf", hf)):
            p = run(["/usr/bin/time", "-f", "maxrss %M", a.headwise, "run", path, "--tokens", "1,2,3", "-n", "3",
                     "--temp", "0", "--threads", str(a.threads)])
            load[fmt].append(float(re.search(r"load ([\d.]+) s", p.stderr).group(1)))
            rss[fmt].append(int(re.search(r"maxrss (\d+)", p.stderr).group(1)) / 1024)
    print("load (headwise run --tokens 1,2,3 -n 3; weights F32):")
    for fmt in () if a.skip_load else ("gguf", "hf"):
        mb = sizes[fmt] / 2**20
        print(f"  {fmt:4s}: file {mb:.0f} MiB, load {med(load[fmt])} s, peak RSS {med(rss[fmt])} MiB "
              f"= {statistics.median(rss[fmt]) / mb:.2f}x the file")

    pre = {"gguf": [], "syn": []}
    dec = {"gguf": [], "syn": []}
    common = a.bench_args.split() + ["--threads", str(a.threads), "--no-peak"]
    for _ in range(a.bench_rounds):
        for fmt, model in (("gguf", [gguf]), ("syn", ["--synthetic", "llama-134m"])):
            p = run([a.headwise, "bench"] + model + common)
            pre[fmt].append(float(re.search(r"prefill\s+([\d.]+) tokens/s", p.stdout).group(1)))
            dec[fmt].append(float(re.search(r"decode\s+([\d.]+) tokens/s", p.stdout).group(1)))
    print(f"bench {a.bench_args}, {a.threads} threads ({a.bench_rounds} alternating rounds):")
    for fmt, label in (("gguf", "GGUF file"), ("syn", "--synthetic llama-134m")):
        print(f"  {label:24s}: prefill {med(pre[fmt])} tok/s, decode {med(dec[fmt])} tok/s")
    print(f"  GGUF / synthetic: prefill {statistics.median(pre['gguf']) / statistics.median(pre['syn']):.3f}, "
          f"decode {statistics.median(dec['gguf']) / statistics.median(dec['syn']):.3f}")


if __name__ == "__main__":
    main()
