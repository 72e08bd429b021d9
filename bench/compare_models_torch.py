#!/usr/bin/python3
"""headwise against a plain PyTorch implementation of the same models, end to end.

For each model, in one run of this script:
  (a) headwise: `headwise bench --synthetic NAME --prompt-len P --gen-len G --threads N
      --json` (seeded random weights; its own timing; the machine peak measured by the
      same run; the cpu/wall ratio of its timed repeats);
  (b) the same architecture in PyTorch 1.13, float32, torch.no_grad(), random weights,
      written the way a straightforward serving implementation would be: the prompt in
      one pass (causal attention as matmul + masked softmax: 1.13 has no
      scaled_dot_product_attention), then one token at a time against a preallocated
      KV cache, each token the argmax of the previous logits (as headwise does).

The presets match headwise's synthetic models (runtime/synthetic.cpp):
  gpt2-small     12 layers, d 768, 12 heads, vocab 50257, context 1024, GELU (tanh),
                 LayerNorm, learned positions, biases, classifier tied to wte
  llama-134m     12 layers, d 768, 12 heads, d_ff 2048, vocab 32000, RMSNorm, RoPE
                 (interleaved pairs, theta 10000), SwiGLU, untied classifier
  llama-1b-like  16 layers, d 2048, 32 heads, 8 KV heads, d_ff 8192, vocab 32000

Both sides compute logits for the last prompt position only (as a server does).
Grouped-query attention in torch stacks the query heads of each KV head as rows of one
batched matmul, so no repeated copy of the cache is made.

Run with Debian's python (the one that sees python3-torch):
  /usr/bin/python3 bench/compare_models_torch.py --headwise build/headwise --threads 2
  /usr/bin/python3 bench/compare_models_torch.py --headwise build/headwise --batch-check
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

# name: architecture and dimensions (same as headwise::Model::synthetic)
MODELS = {
    "gpt2-small": dict(arch="gpt2", layers=12, d=768, heads=12, kv_heads=12, d_ff=3072,
                       vocab=50257, context=1024),
    "llama-134m": dict(arch="llama", layers=12, d=768, heads=12, kv_heads=12, d_ff=2048,
                       vocab=32000, context=2048),
    "llama-1b-like": dict(arch="llama", layers=16, d=2048, heads=32, kv_heads=8, d_ff=8192,
                          vocab=32000, context=2048),
}
DEFAULT_MODELS = "gpt2-small,llama-134m,llama-1b-like"


def default_prompt_len(name, gen_len):
    """1024 for gpt2-small, 512 otherwise; capped so that prompt + generated tokens fit
    the context (GPT-2's learned positions stop at 1024)."""
    want = 1024 if name == "gpt2-small" else 512
    return max(1, min(want, MODELS[name]["context"] - gen_len))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=DEFAULT_MODELS,
                   help="comma-separated subset of %s (default: all)" % ",".join(MODELS))
    p.add_argument("--prompt-len", type=int, default=None,
                   help="prompt tokens (default: 1024 for gpt2-small, capped to its context "
                        "minus --gen-len; 512 otherwise)")
    p.add_argument("--gen-len", type=int, default=32, help="decoded tokens (default 32)")
    p.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    p.add_argument("--repeat", type=int, default=3, help="timed repeats per model (default 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed repeats first (default 1)")
    p.add_argument("--headwise", default="./build/headwise",
                   help="the headwise binary (default ./build/headwise)")
    p.add_argument("--markdown", action="store_true",
                   help="print the table as Markdown (for bench/README.md)")
    p.add_argument("--batch-check", action="store_true",
                   help="instead: headwise bench --synthetic gpt2-small --prompt-len 512 "
                        "--gen-len 16 --batch 8, batched vs sequential decode (no torch)")
    a = p.parse_args()
    if a.threads < 1 or a.repeat < 1 or a.warmup < 0 or a.gen_len < 1:
        p.error("--threads, --repeat and --gen-len must be >= 1, --warmup >= 0")
    if a.prompt_len is not None and a.prompt_len < 1:
        p.error("--prompt-len must be >= 1")
    a.models = [m.strip() for m in a.models.split(",") if m.strip()]
    unknown = [m for m in a.models if m not in MODELS]
    if unknown or not a.models:
        p.error("unknown model(s) %s; choose from %s" % (",".join(unknown), ",".join(MODELS)))
    for m in a.models:
        plen = a.prompt_len or default_prompt_len(m, a.gen_len)
        if plen + a.gen_len > MODELS[m]["context"]:
            p.error("%s: --prompt-len + --gen-len = %d exceeds its context of %d"
                    % (m, plen + a.gen_len, MODELS[m]["context"]))
    resolve_headwise(p, a)
    return a


def run_headwise(args, extra, env):
    cmd = [args.headwise, "bench"] + extra + [
        "--threads", str(args.threads), "--repeat", str(args.repeat),
        "--warmup", str(args.warmup), "--json"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("compare_models_torch: %s failed (exit %d):\n%s"
                 % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)


# --- the PyTorch side ---------------------------------------------------------------

class TorchModel:
    """GPT-2 or Llama with random weights (the scale headwise uses: uniform in
    ±sqrt(3/fan_in), norm gains 1, biases ±0.02) and a preallocated KV cache."""

    def __init__(self, torch, cfg, max_ctx, seed=1):
        self.t, self.c = torch, cfg
        F = torch.nn.functional
        self.F = F
        g = torch.Generator().manual_seed(seed)
        D, L, H, Hkv, Dff, V = (cfg[k] for k in ("d", "layers", "heads", "kv_heads", "d_ff", "vocab"))
        self.hd = D // H

        def w(*shape, fan_in):  # uniform(-a, a)
            a = (3.0 / fan_in) ** 0.5
            return torch.empty(*shape).uniform_(-a, a, generator=g)

        def bias(n):
            return torch.empty(n).uniform_(-0.02, 0.02, generator=g)

        self.layers = []
        if cfg["arch"] == "gpt2":
            self.wte = w(V, D, fan_in=D)                # (vocab, d), also the classifier
            self.wpe = w(cfg["context"], D, fan_in=D)   # (context, d)
            for _ in range(L):
                # Hugging Face Conv1D layout: weights (in, out), y = x @ W + b
                self.layers.append(dict(
                    ln1_w=torch.ones(D), ln1_b=bias(D),
                    attn_w=w(D, 3 * D, fan_in=D), attn_b=bias(3 * D),
                    proj_w=w(D, D, fan_in=D), proj_b=bias(D),
                    ln2_w=torch.ones(D), ln2_b=bias(D),
                    fc_w=w(D, Dff, fan_in=D), fc_b=bias(Dff),
                    fc2_w=w(Dff, D, fan_in=Dff), fc2_b=bias(D)))
            self.lnf_w, self.lnf_b = torch.ones(D), bias(D)
        else:
            self.emb = w(V, D, fan_in=D)
            for _ in range(L):
                # nn.Linear layout: weights (out, in), y = x @ Wᵀ
                self.layers.append(dict(
                    attn_norm=torch.ones(D), wq=w(H * self.hd, D, fan_in=D),
                    wk=w(Hkv * self.hd, D, fan_in=D), wv=w(Hkv * self.hd, D, fan_in=D),
                    wo=w(D, H * self.hd, fan_in=H * self.hd), ffn_norm=torch.ones(D),
                    w1=w(Dff, D, fan_in=D), w3=w(Dff, D, fan_in=D), w2=w(D, Dff, fan_in=Dff)))
            self.norm = torch.ones(D)
            self.out = w(V, D, fan_in=D)
            # RoPE on interleaved pairs (x[2i], x[2i+1]), angle pos·theta^(-2i/hd)
            inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2, dtype=torch.float64) / self.hd))
            ang = torch.arange(max_ctx, dtype=torch.float64)[:, None] * inv[None, :]
            self.cos, self.sin = ang.cos().float(), ang.sin().float()  # (max_ctx, hd/2)
        # KV cache per layer: (kv_heads, max_ctx, head_dim), written in place
        self.k_cache = [torch.zeros(Hkv, max_ctx, self.hd) for _ in range(L)]
        self.v_cache = [torch.zeros(Hkv, max_ctx, self.hd) for _ in range(L)]

    def attend(self, q, k, v, layer, pos0):
        """q (T, H·hd), k/v (T, Hkv·hd) of positions pos0..pos0+T-1 → (T, H·hd)."""
        t, c = self.t, self.c
        T, H, Hkv, hd = q.shape[0], c["heads"], c["kv_heads"], self.hd
        kc, vc = self.k_cache[layer], self.v_cache[layer]
        kc[:, pos0:pos0 + T] = k.view(T, Hkv, hd).transpose(0, 1)
        vc[:, pos0:pos0 + T] = v.view(T, Hkv, hd).transpose(0, 1)
        Tk, g = pos0 + T, H // Hkv
        K, Vv = kc[:, :Tk], vc[:, :Tk]                                  # (Hkv, Tk, hd)
        # The query heads sharing a KV head (head h uses KV head h // g) are stacked as
        # rows, so one bmm per KV head reads K and V once, without a repeated copy.
        qh = q.view(T, Hkv, g, hd).permute(1, 2, 0, 3).reshape(Hkv, g * T, hd)
        s = t.bmm(qh, K.transpose(1, 2)).mul_(hd ** -0.5)               # (Hkv, g·T, Tk)
        if T > 1:  # query i (position pos0+i) sees keys 0..pos0+i
            mask = t.ones(T, Tk, dtype=t.bool).triu_(pos0 + 1)
            s.view(Hkv, g, T, Tk).masked_fill_(mask, float("-inf"))
        o = t.bmm(t.softmax(s, dim=-1), Vv)                             # (Hkv, g·T, hd)
        return o.view(Hkv, g, T, hd).permute(2, 0, 1, 3).reshape(T, H * hd)

    def forward(self, tokens, pos0):
        """tokens: (T,) int64 at positions pos0.. → logits of the last position (vocab,)."""
        t, F, c = self.t, self.F, self.c
        T, D = tokens.shape[0], c["d"]
        if c["arch"] == "gpt2":
            x = self.wte[tokens] + self.wpe[pos0:pos0 + T]
            for i, p in enumerate(self.layers):
                h = F.layer_norm(x, (D,), p["ln1_w"], p["ln1_b"], 1e-5)
                qkv = t.addmm(p["attn_b"], h, p["attn_w"])
                q, k, v = qkv.split(D, dim=1)
                x = x + t.addmm(p["proj_b"], self.attend(q, k, v, i, pos0), p["proj_w"])
                h = F.layer_norm(x, (D,), p["ln2_w"], p["ln2_b"], 1e-5)
                f = F.gelu(t.addmm(p["fc_b"], h, p["fc_w"]), approximate="tanh")
                x = x + t.addmm(p["fc2_b"], f, p["fc2_w"])
            h = F.layer_norm(x[-1:], (D,), self.lnf_w, self.lnf_b, 1e-5)
            return F.linear(h, self.wte)[0]

        def rms(x, w):
            return x * t.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

        def rope(x, heads):
            xr = x.view(T, heads, self.hd // 2, 2)
            cos = self.cos[pos0:pos0 + T, None, :]
            sin = self.sin[pos0:pos0 + T, None, :]
            a, b = xr[..., 0], xr[..., 1]
            return t.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).view(T, -1)

        x = self.emb[tokens]
        for i, p in enumerate(self.layers):
            h = rms(x, p["attn_norm"])
            q = rope(F.linear(h, p["wq"]), c["heads"])
            k = rope(F.linear(h, p["wk"]), c["kv_heads"])
            v = F.linear(h, p["wv"])
            x = x + F.linear(self.attend(q, k, v, i, pos0), p["wo"])
            h = rms(x, p["ffn_norm"])
            x = x + F.linear(F.silu(F.linear(h, p["w1"])) * F.linear(h, p["w3"]), p["w2"])
        return F.linear(rms(x[-1:], self.norm), self.out)[0]


def run_torch(torch, args, name, plen):
    """Median prefill and decode tokens/s over the repeats, and cpu/wall of the timed
    repeats (this process only)."""
    cfg = MODELS[name]
    m = TorchModel(torch, cfg, plen + args.gen_len)
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, cfg["vocab"], (plen,), generator=g)
    pre, dec = [], []
    with torch.no_grad():
        ru0 = w0 = None
        for r in range(args.warmup + args.repeat):
            if r == args.warmup:
                ru0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            t0 = time.perf_counter()
            logits = m.forward(prompt, 0)          # the cache is overwritten from position 0
            t_pre = time.perf_counter() - t0
            t_dec = 0.0
            tok = int(logits.argmax())
            for i in range(args.gen_len):
                t0 = time.perf_counter()
                logits = m.forward(torch.tensor([tok]), plen + i)
                t_dec += time.perf_counter() - t0
                tok = int(logits.argmax())
            if r >= args.warmup:
                pre.append(plen / t_pre)
                dec.append(args.gen_len / t_dec)
        ru1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    return statistics.median(pre), statistics.median(dec), cpu / (w1 - w0)


# --- output -------------------------------------------------------------------------

def batch_check(args):
    hw = run_headwise(args, ["--synthetic", "gpt2-small", "--prompt-len", "512",
                             "--gen-len", "16", "--batch", "8"], dict(os.environ))
    b = hw["batch"]
    print("headwise bench --synthetic gpt2-small --prompt-len 512 --gen-len 16 --batch 8: "
          "%d threads, median of %d repeats after %d warmup, cpu/wall %.2f"
          % (args.threads, args.repeat, args.warmup, hw["cpu_over_wall"]))
    head = ["decode", "tokens/s median", "min", "max"]
    rows = [["batched (decode_batch, 8 per step)"] + [fmt(b["batched_tokens_per_s"][k], ".2f")
                                                      for k in ("median", "min", "max")],
            ["sequential (8 sessions in turn)"] + [fmt(b["sequential_tokens_per_s"][k], ".2f")
                                                   for k in ("median", "min", "max")]]
    print_table(head, rows, args.markdown)
    print("batched / sequential: %.2fx" % b["ratio"])


def main():
    args = parse_args()
    if args.batch_check:
        batch_check(args)  # headwise only: torch is not loaded at all
        return
    torch, headwise_env = load_torch_at_its_best(args.threads, "compare_models_torch")

    rows, peaks = [], []
    for name in args.models:
        plen = args.prompt_len or default_prompt_len(name, args.gen_len)
        print("%s: headwise ..." % name, file=sys.stderr, flush=True)
        hw = run_headwise(args, ["--synthetic", name, "--prompt-len", str(plen),
                                 "--gen-len", str(args.gen_len)], headwise_env)
        print("%s: torch ..." % name, file=sys.stderr, flush=True)
        t_pre, t_dec, t_cpu = run_torch(torch, args, name, plen)
        mach, pre, dec = hw["machine"], hw["prefill"], hw["decode"]
        h_pre, h_dec = pre["tokens_per_s"]["median"], dec["tokens_per_s"]["median"]
        peaks.append("%s: %s GFLOP/s fp32 FMA (%s, %d threads), read %s GB/s" % (
            name, fmt(mach.get("peak_gflops"), ".0f"), hw["run"]["isa"], hw["run"]["threads"],
            fmt(mach.get("peak_read_gbps"), ".1f")))
        # Decode: weights + KV bytes one token reads (headwise's per-op counts) at the
        # median decode rate, against the measured read bandwidth.
        bw = None
        if mach.get("peak_read_gbps"):
            bw = 100.0 * dec["bytes_per_token"] * h_dec / 1e9 / mach["peak_read_gbps"]
        rows.append([
            name, str(plen), str(args.gen_len),
            fmt(h_pre, ".1f"), fmt(t_pre, ".1f"), fmt(h_pre / t_pre, ".2f"),
            fmt(h_dec, ".2f"), fmt(t_dec, ".2f"), fmt(h_dec / t_dec, ".2f"),
            fmt(pre["gemm"].get("pct_peak"), ".1f"), fmt(bw, ".1f"),
            fmt(hw["cpu_over_wall"], ".2f"), fmt(t_cpu, ".2f"),
        ])

    print("threads %d, median of %d repeats after %d warmup; torch %s; ratio = headwise / torch "
          "(> 1: headwise is faster)" % (args.threads, args.repeat, args.warmup, torch.__version__))
    print("machine peak, measured by each headwise run:")
    for p in peaks:
        print("  " + p)
    print("cpu/wall well below %d means other work shared the cores during that run\n"
          % args.threads)
    head = ["model", "prompt", "gen", "prefill tok/s headwise", "torch", "ratio",
            "decode tok/s headwise", "torch", "ratio", "prefill GEMM % FMA peak",
            "decode % read bw", "cpu/wall headwise", "torch"]
    print_table(head, rows, args.markdown)


if __name__ == "__main__":
    main()
