#!/usr/bin/python3
"""Two quant_bench binaries (e.g. main's and a branch's) on the same benchmarks, run in
alternation so that both see the same load; prints each side's median and range of the
CPU time per iteration, and the ratio of the medians (A / B: > 1 means B is faster).

  flock /tmp/bench.lock /usr/bin/python3 bench/ab_quant_bench.py A/quant_bench B/quant_bench \
      --filter 'projection/q4_K|projection/q6_K' --rounds 5 --threads 1

CPU time, not wall time: on a shared machine the wall time of a run also counts the time
other processes held the cores (read it with --threads 1, as quant_bench's header says).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_once(binary, filt, threads, min_time):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([binary, f"--benchmark_filter={filt}", f"--benchmark_min_time={min_time}",
                          "--benchmark_format=json"], env=env, check=True, capture_output=True, text=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("error_occurred"):
            continue
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        res[b["name"]] = (b["cpu_time"] * scale, b.get("label", ""))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="quant_bench binary A (the baseline)")
    ap.add_argument("b", help="quant_bench binary B")
    ap.add_argument("--filter", default="projection/q4_K|projection/q6_K")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", default="0.2")
    args = ap.parse_args()
    times = {"A": {}, "B": {}}
    labels = {"A": {}, "B": {}}
    for r in range(args.rounds):
        for side, binary in (("A", args.a), ("B", args.b)) if r % 2 == 0 else (("B", args.b), ("A", args.a)):
            for name, (t, label) in run_once(binary, args.filter, args.threads, args.min_time).items():
                times[side].setdefault(name, []).append(t)
                labels[side][name] = label
    names = [n for n in times["A"] if n in times["B"]]
    if not names:
        sys.exit("no benchmark ran on both sides (filter %r)" % args.filter)
    print(f"{args.rounds} rounds alternated, OMP_NUM_THREADS={args.threads}, CPU ms per iteration: median [min, max]")
    print(f"{'benchmark':44} {'A':>24} {'B':>24}  A/B   kernels")
    for n in names:
        a, b = times["A"][n], times["B"][n]
        fa = f"{statistics.median(a):.3f} [{min(a):.3f}, {max(a):.3f}]"
        fb = f"{statistics.median(b):.3f} [{min(b):.3f}, {max(b):.3f}]"
        print(f"{n:44} {fa:>24} {fb:>24}  {statistics.median(a) / statistics.median(b):4.2f}x  "
              f"{labels['A'][n]} -> {labels['B'][n]}")


if __name__ == "__main__":
    main()
