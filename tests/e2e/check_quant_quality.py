#!/usr/bin/env python3
"""Quality of the low-bit weight types on a really trained model (stories260K).

stories260K is converted to GGUF (f32) and then to every weight type with
`headwise convert --weights`; a story (sampled from the f32 model, seeded, tokenized:
511 ids, 512 positions with the one generated) is fed to each, and each position's
next-token distribution is compared with the f32 model's: top-1 agreement and
KL(p_f32 || p_type), mean over the positions. Printed, and bounded:

  bf16, f16: KL < 2e-4, top-1 ≥ 97%  (bf16 rounds weights and inputs to 8 bits of
             mantissa: "almost exact"; f16 weights with fp32 inputs are closer still)
  q8_0:      KL < 1e-3, top-1 ≥ 95%  (the issue's bound)
  q6_k, q5_k, q5_k_m, q4_k, q4_k_m: Q8_0's bound (stories260K has dim 64 and hidden
             172, so the K-quants' 256-element blocks do not fit its rows: convert
             falls back to Q8_0 for rows of 64 and F16 for rows of 172, which this test
             also checks is what happened: it is Q8_0 quality; Q5_K itself is checked
             against llama.cpp on a model whose rows fit, e2e.llamacpp_quant)
  q4_0:      KL < 0.2, top-1 ≥ 75% (4-bit weights on a model whose every matrix is
             tiny; measured 0.09 and 85%)

The same Q4_0 file also runs with every ISA this CPU has (HEADWISE_ISA): the
distributions must agree with the default ISA's to 1e-3 in mean KL. Only fp32
summation order differs between ISAs, but the inputs of every product are quantized to
int8: a last-bit difference that moves a value across a rounding boundary changes it
by a whole int8 step, and such steps compound over 5 layers and 511 positions
(measured 1.5e-4 .. 1.8e-4, against 9e-2 for Q4_0 itself).
"""
import os
import re
import sys

import e2e_common as common

TYPES = ["bf16", "f16", "q8_0", "q6_k", "q5_k", "q5_k_m", "q4_k", "q4_k_m", "q4_0"]
BOUNDS = {  # type: (max mean KL, min top-1 agreement)
    "bf16": (2e-4, 0.97), "f16": (2e-4, 0.97), "q8_0": (1e-3, 0.95),
    "q6_k": (1e-3, 0.95), "q5_k": (1e-3, 0.95), "q5_k_m": (1e-3, 0.95), "q4_k": (1e-3, 0.95), "q4_k_m": (1e-3, 0.95), "q4_0": (0.2, 0.75),
}
N = 512


def logits(args, gguf, tok, ids, isa=None):
    """[positions][vocab] logits of every position of the prompt `ids`."""
    import numpy as np
    out = os.path.join(args.workdir, os.path.basename(gguf) + (isa or "") + ".npy")
    common.run_cli(args.headwise, ["run", gguf, "--tokenizer", tok, "--tokens", ",".join(map(str, ids)), "-n", str(N),
                                   "--temp", "0", "--logits", out], isa=isa)
    return np.load(out).astype(np.float64)


def compare(ref, got):
    import numpy as np
    def logp(z):
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    lp, lq = logp(ref), logp(got)
    kl = (np.exp(lp) * (lp - lq)).sum(axis=1)
    top1 = (ref.argmax(axis=1) == got.argmax(axis=1)).mean()
    return float(kl.mean()), float(kl.max()), float(top1)


def main():
    args = common.parse_args(__doc__)
    common.require_numpy()
    models = common.models_dir(args.shared)
    ckpt = os.path.join(models, "stories260K", "stories260K.bin")
    tok = os.path.join(models, "stories260K", "tok512.bin")
    f32 = os.path.join(args.workdir, "stories260K.gguf")
    common.run_cli(args.headwise, ["convert", "llama2c", ckpt, "--tokenizer", tok, "-o", f32])
    # stories sampled from the f32 model (seeded; each ends at its EOS), tokenized:
    # the first 511 ids
    text = ""
    for seed in range(7, 17):
        p = common.run_cli(args.headwise, ["run", ckpt, "--tokenizer", tok, "--prompt", "Once upon a time",
                                           "-n", "512", "--temp", "0.8", "--seed", str(seed)])
        text += p.stdout.decode().strip() + "\n"
        p = common.run_cli(args.headwise, ["tokenize", ckpt, "--tokenizer", tok, "--text", text])
        ids = [int(t) for t in p.stdout.split()][: N - 1]
        if len(ids) >= N - 1:
            break
    if len(ids) < N - 1:
        common.fail(f"the sampled story has only {len(ids)} tokens")
    ref = logits(args, f32, tok, ids)
    print(f"  {ref.shape[0]} positions of a sampled story")
    failures = []
    for t in TYPES:
        out = os.path.join(args.workdir, f"stories260K-{t}.gguf")
        p = common.run_cli(args.headwise, ["convert", f32, "--weights", t, "-o", out])
        log = p.stderr.decode()
        if t.startswith(("q4_k", "q5_k")) or t == "q6_k":  # the fallbacks the docstring states
            if not re.search(r"attn_q\.weight\s+F32\s+-> Q8_0\s+fallback", log) or \
               not re.search(r"ffn_down\.weight\s+F32\s+-> F16\s+fallback", log):
                failures.append(f"{t}: expected the Q8_0/F16 fallbacks, convert said:\n{log}")
        mean_kl, max_kl, top1 = compare(ref, logits(args, out, tok, ids))
        kl_bound, top1_bound = BOUNDS[t]
        ok = mean_kl < kl_bound and top1 >= top1_bound
        print(f"  {t:7s} mean KL {mean_kl:.2e} (max {max_kl:.2e}, bound {kl_bound:.0e})  "
              f"top-1 {100 * top1:.1f}% (bound {100 * top1_bound:.0f}%)  {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{t}: mean KL {mean_kl:.3g}, top-1 {top1:.3f}")
        if t == "q4_0":
            base = logits(args, out, tok, ids)
            for isa in common.ISAS:
                p = common.run_cli(args.headwise, ["run", out, "--tokenizer", tok, "--tokens", "1", "-n", "2"],
                                   isa=isa, check=False)
                if p.returncode != 0 and b"only supports" in p.stderr:
                    print(f"  q4_0 on {isa}: this CPU lacks it")
                    continue
                kl, _, agree = compare(base, logits(args, out, tok, ids, isa))
                print(f"  q4_0 on {isa}: KL vs default {kl:.1e}, top-1 {100 * agree:.1f}%")
                if kl > 1e-3:
                    failures.append(f"q4_0 on {isa}: KL {kl:.3g} against the default ISA")
    if failures:
        common.fail("\n".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
