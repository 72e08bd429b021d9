#!/usr/bin/env python3
"""Decode speed with an f32 against a 16-bit KV cache, in one run: `headwise bench` with
--kv-type f32 and --kv-type f16 (or bf16) alternating for --rounds rounds (so both see the
shared machine in the same states), then the medians, ranges and the ratio of the
per-round medians, with the bytes each decoded token reads over the read bandwidth
measured next to each repeat.

  bench/kv_type_compare.py --headwise build/headwise -- --synthetic llama-134m \
      --prompt-len 512 --gen-len 128 --threads 2
"""
import argparse
import json
import statistics
import subprocess
import sys

from bench_common import resolve_headwise


def run(headwise, bench_args, kv):
    cmd = [headwise, "bench", *bench_args, "--kv-type", kv, "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    d = json.loads(out)["decode"]
    attn = [op for op in d["ops"] if op.get("op") == "attention"]
    return {"tps": d["tokens_per_s"]["median"], "bytes": d["bytes_per_token"],
            "pct_bw": d["pct_bw"], "read": d["read_gbps_per_repeat"]["median"],
            "attn_pct_bw": attn[0].get("pct_bw") if attn else None}


def span(xs):
    return "%.2f (%.2f-%.2f)" % (statistics.median(xs), min(xs), max(xs))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--headwise", default="build/headwise")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--types", default="f32,f16", help="two KV types, baseline first")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="after --: headwise bench options")
    a = p.parse_args()
    resolve_headwise(p, a)
    bench_args = [x for x in a.bench_args if x != "--"]
    base, other = a.types.split(",")
    res = {base: [], other: []}
    for r in range(a.rounds):
        for kv in (base, other) if r % 2 == 0 else (other, base):
            res[kv].append(run(a.headwise, bench_args, kv))
            print("round %d %-4s decode %.2f tok/s, %.1f MiB/token, %.1f%% of %.1f GB/s" %
                  (r + 1, kv, res[kv][-1]["tps"], res[kv][-1]["bytes"] / 2**20, res[kv][-1]["pct_bw"],
                   res[kv][-1]["read"]), file=sys.stderr, flush=True)
    print("headwise bench %s, %d rounds alternating" % (" ".join(bench_args), a.rounds))
    for kv in (base, other):
        xs = res[kv]
        print("  %-4s decode tokens/s %s; reads %.1f MiB/token = %s%% of the read bandwidth "
              "(%s GB/s); attention op %s%% of it" %
              (kv, span([x["tps"] for x in xs]), xs[0]["bytes"] / 2**20,
               span([x["pct_bw"] for x in xs]), span([x["read"] for x in xs]),
               span([x["attn_pct_bw"] for x in xs]) if xs[0]["attn_pct_bw"] is not None else "-"))
    ratios = [o["tps"] / b["tps"] for o, b in zip(res[other], res[base])]
    print("  %s/%s decode speed ratio per round: %s" % (other, base, span(ratios)))


if __name__ == "__main__":
    main()
