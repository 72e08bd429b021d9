#!/usr/bin/python3
"""headwise against PyTorch's composed attention, on the issue's shapes S1..S5.

For each shape, in one run of this script:
  (a) headwise: `headwise bench attention ... --json` (the fused kernel, its own timing,
      the machine peak measured by the same run, the cpu/wall ratio of its timed loop);
  (b) PyTorch 1.13, float32, composed the way models write it, at its best:
        scores = q @ k.transpose(-1, -2) * scale      (batched over batch and heads)
        scores.masked_fill_(causal upper triangle, -inf)
        p = softmax(scores, dim=-1);  out = p @ v
      with GQA K/V expanded by repeat_interleave, torch.set_num_threads(N),
      torch.no_grad(), warmup then the median of repeats.

FLOPs (the same count for both, so GFLOP/s compare directly):
  causal prefill 2·B·Hq·Dh·T·(T+1); non-causal 4·B·Hq·Dh·Tq·Tk;
  one decode token 4·B·Hq·Dh·Tk.  Decode K/V bytes: 2·B·Tk·Hkv·Dh·4.

Run with Debian's python (the one that sees python3-torch):
  /usr/bin/python3 bench/compare_torch.py --headwise build/headwise --threads 2
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import fmt, load_torch_at_its_best, print_table, resolve_headwise  # noqa: E402

# name: (batch, q_len, kv_len, q_heads, kv_heads, head_dim, causal)
SHAPES = {
    "S1": (1, 1024, 1024, 12, 12, 64, True),
    "S2": (1, 2048, 2048, 32, 32, 128, True),
    "S3": (8, 256, 256, 12, 12, 64, True),
    "S4": (1, 1, 2048, 32, 32, 128, True),  # decode: one token on a 2048-key cache
    "S5": (1, 2048, 2048, 32, 8, 128, True),  # GQA
}


def flops(b, tq, tk, hq, hkv, d, causal):
    if tq == 1:
        return 4.0 * b * hq * d * tk
    if causal:
        return 2.0 * b * hq * d * tq * (tq + 1)
    return 4.0 * b * hq * d * tq * tk


def kv_bytes(b, tq, tk, hq, hkv, d, causal):
    return 2.0 * b * tk * hkv * d * 4


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per shape (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    p.add_argument("--headwise", default="./build/headwise",
                   help="the headwise binary (default ./build/headwise)")
    p.add_argument("--shapes", default=",".join(SHAPES),
                   help="comma-separated subset of " + ",".join(SHAPES) + " (default: all)")
    p.add_argument("--markdown", action="store_true",
                   help="print the table as Markdown (for bench/README.md)")
    a = p.parse_args()
    if a.threads < 1 or a.repeat < 1 or a.warmup < 0:
        p.error("--threads and --repeat must be >= 1, --warmup >= 0")
    a.shapes = [s.strip() for s in a.shapes.split(",") if s.strip()]
    unknown = [s for s in a.shapes if s not in SHAPES]
    if unknown or not a.shapes:
        p.error("unknown shape(s) %s; choose from %s" % (",".join(unknown), ",".join(SHAPES)))
    resolve_headwise(p, a)
    return a


def run_headwise(args, shape, env):
    b, tq, tk, hq, hkv, d, causal = SHAPES[shape]
    cmd = [args.headwise, "bench", "attention", "--batch", str(b), "--heads", str(hq),
           "--kv-heads", str(hkv), "--head-dim", str(d), "--threads", str(args.threads),
           "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--json"]
    cmd += ["--decode", str(tk)] if tq == 1 else ["--seq", str(tq)]
    if not causal:
        cmd.append("--no-causal")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("compare_torch: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode,
                                                              r.stderr.strip()))
    return json.loads(r.stdout)


def run_torch(torch, args, shape):
    """Median ms of the composed path, and its cpu/wall ratio (this process only)."""
    b, tq, tk, hq, hkv, d, causal = SHAPES[shape]
    g = torch.Generator().manual_seed(0)
    # [batch, heads, positions, head_dim]: the layout torch's batched matmul wants, so
    # no transposing copy is timed.
    q = torch.randn(b, hq, tq, d, generator=g)
    k = torch.randn(b, hkv, tk, d, generator=g)
    v = torch.randn(b, hkv, tk, d, generator=g)
    scale = d ** -0.5
    # Query i sits at key position tk - tq + i; the mask is a constant of the shape, so
    # it is built once. A single decode query sees every key: nothing to mask.
    mask = None
    if causal and tq > 1:
        mask = torch.ones(tq, tk, dtype=torch.bool).triu_(tk - tq + 1)

    def attend():
        kk, vv = k, v
        if hkv != hq:
            kk = k.repeat_interleave(hq // hkv, dim=1)
            vv = v.repeat_interleave(hq // hkv, dim=1)
        scores = torch.matmul(q, kk.transpose(-1, -2)).mul_(scale)
        if mask is not None:
            scores.masked_fill_(mask, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), vv)

    with torch.no_grad():
        for _ in range(args.warmup):
            attend()
        times = []
        ru0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            attend()
            times.append((time.perf_counter() - t0) * 1e3)
        ru1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    return statistics.median(times), cpu / (w1 - w0)


HEAD = ["shape", "headwise ms", "GFLOP/s", "% peak", "GB/s", "% bw", "cpu/wall",
        "torch ms", "torch GFLOP/s", "torch cpu/wall", "torch ms / headwise ms"]


def main():
    args = parse_args()
    torch, headwise_env = load_torch_at_its_best(args.threads, "compare_torch")

    rows, peaks = [], []
    for name in args.shapes:
        shape = SHAPES[name]
        hw = run_headwise(args, name, headwise_env)
        t_ms, t_cpu = run_torch(torch, args, name)
        decode = shape[1] == 1
        t_gflops = flops(*shape) / (t_ms * 1e-3) / 1e9
        peaks.append("%s: %s GFLOP/s fp32 FMA (%s, %d threads)%s" % (
            name, fmt(hw.get("peak_gflops"), ".0f"), hw["isa"], hw["threads"],
            ", read %s GB/s" % fmt(hw.get("peak_read_gbps"), ".1f") if decode else ""))
        b, tq, tk, hq, hkv, d, causal = shape
        label = "%s B%d %s H%d%s D%d" % (name, b, "Tq1 Tk%d" % tk if decode else "T%d" % tq, hq,
                                         "/%d" % hkv if hkv != hq else "", d)
        rows.append([
            label, fmt(hw["median_ms"], ".3f"), fmt(hw["gflops"], ".1f"),
            fmt(hw.get("pct_peak"), ".1f"),
            fmt(hw.get("gbps"), ".1f"), fmt(hw.get("pct_bw"), ".1f"),
            fmt(hw["cpu_over_wall"], ".2f"),
            fmt(t_ms, ".3f"), fmt(t_gflops, ".1f"), fmt(t_cpu, ".2f"),
            fmt(t_ms / hw["median_ms"], ".2f"),
        ])

    print("threads %d, median of %d runs after %d warmup; torch %s" % (
        args.threads, args.repeat, args.warmup, torch.__version__))
    print("machine peak, measured by each headwise run:")
    for p in peaks:
        print("  " + p)
    print("cpu/wall well below %d means other work shared the cores during that run\n"
          % args.threads)
    print_table(HEAD, rows, args.markdown)


if __name__ == "__main__":
    main()
