#!/usr/bin/python3
"""Two `headwise` binaries (e.g. main's and a branch's) on the same `headwise bench`
command, run in alternation so that both see the same load; prints each side's median
and range of decode tokens/s and of the decode attention row (ms per step, GB/s of K/V
read, % of the read bandwidth measured next to the run), and the ratio of the medians
(B / A for rates: > 1 means B is faster).

  flock /tmp/bench.lock /usr/bin/python3 bench/ab_decode_attention.py A/headwise B/headwise \\
      --rounds 3 -- /tmp/hw_compare_llama_cpp/llama-1b-like/llama-1b-like-q4_k_m.gguf \\
      --threads 2 --prompt-len 512 --gen-len 64 --kv-type f16

Everything after `--` is passed to `headwise bench` (plus --json). Each run reports its
own median over --repeat timed repeats; the table gives the median and range of those
medians over the rounds.
"""
import argparse
import json
import statistics
import subprocess
import sys


def run_once(binary, bench_args):
    out = subprocess.run([binary, "bench", *bench_args, "--json"], check=True, capture_output=True,
                         text=True).stdout
    d = json.loads(out)
    dec = d["decode"]
    att = next((o for o in dec["ops"] if o["op"] == "attention"), None)
    if att is None:
        sys.exit("no decode attention row in the bench output")
    steps = dec["profiled_steps"]
    return {
        "decode tok/s": dec["tokens_per_s"]["median"],
        "attention ms/step": att["ms"] / steps,
        "attention share %": att["share_pct"],
        "attention GB/s": att.get("gbps"),
        "attention % bw": att.get("pct_bw"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="headwise binary A (the baseline)")
    ap.add_argument("b", help="headwise binary B")
    ap.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        ap.print_usage()
        sys.exit("give the `headwise bench` arguments after --")
    cut = argv.index("--")
    args = ap.parse_args(argv[:cut])
    bench_args = argv[cut + 1:]
    vals = {"A": {}, "B": {}}
    for r in range(args.rounds):
        for side, binary in (("A", args.a), ("B", args.b)) if r % 2 == 0 else (("B", args.b), ("A", args.a)):
            for k, v in run_once(binary, bench_args).items():
                if v is not None:
                    vals[side].setdefault(k, []).append(v)
            print(f"round {r + 1} {side}: " + ", ".join(f"{k} {v[-1]:.3g}" for k, v in vals[side].items()),
                  file=sys.stderr, flush=True)
    print(f"{args.rounds} rounds alternated; median [min, max] of each run's figure; "
          f"headwise bench {' '.join(bench_args)}")
    print(f"{'figure':20} {'A':>26} {'B':>26}   B/A")
    for k in vals["A"]:
        a, b = vals["A"][k], vals["B"].get(k)
        if not b:
            continue
        fa = f"{statistics.median(a):.3f} [{min(a):.3f}, {max(a):.3f}]"
        fb = f"{statistics.median(b):.3f} [{min(b):.3f}, {max(b):.3f}]"
        print(f"{k:20} {fa:>26} {fb:>26}  {statistics.median(b) / statistics.median(a):5.2f}")


if __name__ == "__main__":
    main()
