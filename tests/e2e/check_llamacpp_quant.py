#!/usr/bin/env python3
"""headwise against llama.cpp on quantized GGUF files that headwise writes.

A random-weight Llama (arch_models.py's generator; hidden 256, ffn 512, 2 layers, the
Llama 2 vocabulary, so the K-quants' 256-element blocks fit every matrix) is written as
GGUF (hw_make_gguf) and converted by `headwise convert --weights` to Q8_0, Q4_0,
Q4_K_M (Q4_K with Q6_K for layer 1's attn_v/ffn_down and the output matrix) and Q5_K_M
(the same with Q5_K; convert's report must show both types), Q3_K_S ("q3_k": Q3_K, the
output matrix Q6_K) and Q3_K_M (Q3_K; Q5_K for the first two layers' attn_v, Q4_K for
ffn_down and attn_output; Q6_K output), IQ4_XS (the grid of 16 int8 levels in blocks of
32 with 6-bit scales; the output matrix Q6_K), Q2_K (llama.cpp's Q2_K mix: Q2_K, Q3_K for
attn_v, ffn_down and attn_output, Q6_K output), plus F16 and BF16.
llama.cpp (node-llama-cpp 3.21.1, tests/node/llamacpp_probs.mjs) gives its next-token
distribution after each of 100 positions of a text; headwise runs the same ids and
must agree at every position:

  max KL(p_llama.cpp || p_headwise) <= 2e-2 nats, mean <= 5e-3, and the same most likely
  token wherever llama.cpp's top two differ by more than 5e-2.

Why looser than the f32 comparison (e2e.llamacpp_logits, KL <= 1e-3): both read the
same quantized weights (identical dequantized values: kernels/quant tests check the
block semantics against gguf-py), but each quantizes the INPUTS of every product its
own way: headwise to int8 blocks of 32 with one scale each (bf16 for BF16), llama.cpp
to Q8_0 blocks of 32 for Q8_0/Q4_0 and Q8_K blocks of 256 for the K-quants, plus an f16
KV cache. Input rounding of ~0.4% per value moves logits by ~1e-2 here (measured
values printed: mean KL 1e-3 (Q4_0) .. 2.6e-3 (Q4_K_M)). Q5_K_M's weights are closer to
the f32 ones than Q4_K_M's, but the input rounding, which dominates, is the same, so it
gets the same bounds. A wrong block layout or scale packing changes logits by O(1) and
cannot hide under these bounds.

Q5_0, which llama-quantize writes where a Q4_K row is not whole 256-blocks (Q4_K_M
files of models 576 or 896 wide) and headwise re-encodes as Q8_0 at load: the f32 file's
matrices rewritten as Q5_0 by gguf_rewrite.py (ggml's reference quantizer, in NumPy), held
to the same bounds against llama.cpp, which reads Q5_0 natively. Its mean KL to headwise's
own f32 must come in under half of Q4_0's (measured 0.066 against 0.22): a 5th bit
dropped or misplaced, in the file or in the reading, would not. Q4_1 and Q5_1 (x = d·q +
m; Q5_1 is llama-quantize's stand-in for Q5_K), which headwise runs as Q8_0 rows plus one
offset a block, likewise: the same bounds against llama.cpp (an offset lost or misplaced
moves every weight of a block and the logits by O(1)), and Q5_1's mean KL to f32 under
half of Q4_1's. IQ4_NL (IQ4_XS's levels in blocks of 32 with one f16 scale, which
llama-quantize writes where an IQ4_XS row is not whole 256-blocks, and headwise
re-encodes exactly as Q8_0) likewise against llama.cpp. IQ4_XS (4.25 bits a weight,
scales searched per 32) must come closer to f32 than Q4_0 (4.5 bits, no search):
measured mean KL 0.18 against 0.22; a level table or scale packing read wrong would
not.

Q5_K against Q4_K on the same inputs: headwise's own distributions on each file are
also compared with headwise's on the f32 file (printed: mean KL(f32 || type)). Q5_K's
grid step is half Q4_K's, so the weight error halves and the KL, quadratic in it for
small errors, should drop to about a quarter (measured 0.039 against 0.14, ratio 0.27);
q5_k_m must come in under half of q4_k_m's, which a quantizer that wasted the 5th bit
(Q4_K quality, ratio ~1) cannot.
"""
import json
import os
import subprocess
import sys

import arch_common
import e2e_common as common
from check_llamacpp_logits import llamacpp

MAX_KL = 2e-2
# F16 against headwise's own f32: the weights differ only by their f16 rounding, and the
# inputs stay (within 2^-17, split into bf16 hi + lo on AMX) fp32 — measured 1.6e-6; inputs
# rounded to bf16 (BF16's path) measure ~1.7e-4 and would fail this.
F16_OWN_KL = 2e-5
MEAN_KL = 5e-3
TYPES = ["f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q5_k_m", "q3_k", "q3_k_m", "iq4_xs", "q2_k"]
# written by gguf_rewrite.py (llama-quantize's stand-ins; headwise has no writer for them)
REWRITTEN = ["q5_0", "q4_1", "q5_1", "iq4_nl"]
# the types convert's report must show for a mix (its base type and the more-bits Q6_K)
EXPECT_TYPES = {"q4_k_m": ["Q4_K", "Q6_K"], "q5_k_m": ["Q5_K", "Q6_K"], "q3_k": ["Q3_K", "Q6_K"],
                "q3_k_m": ["Q3_K", "Q4_K", "Q5_K", "Q6_K"], "iq4_xs": ["IQ4_XS", "Q6_K"],
                "q2_k": ["Q2_K", "Q3_K", "Q6_K"]}


def agreement(args, gguf, ids, ref):
    """headwise's next-token distributions on `gguf` after each of `ids` against llama.cpp's
    (`ref`, one row per position): (q, ref padded to headwise's vocabulary, KL(ref||q) per
    position, same top-1 per position, positions where llama.cpp's top two differ by more
    than 0.05, whether the bounds above hold). Also used by bench/compare_llama_cpp.py."""
    import numpy as np  # (main() checks it is installed first)
    logits = arch_common.headwise_logits(args, gguf, ids)
    V = logits.shape[1]
    if ref.shape[1] < V:
        ref = np.pad(ref, ((0, 0), (0, V - ref.shape[1])))
    q = np.exp(logits - logits.max(1, keepdims=True))
    q /= q.sum(1, keepdims=True)
    kl = (ref * (np.log(np.maximum(ref, 1e-30)) - np.log(np.maximum(q, 1e-30)))).sum(1)
    top = np.sort(ref, 1)
    clear = (top[:, -1] - top[:, -2]) > 5e-2
    agree = q.argmax(1) == ref.argmax(1)
    good = bool(kl.max() <= MAX_KL and kl.mean() <= MEAN_KL and agree[clear].all())
    return q, ref, kl, agree, clear, good


def main():
    args = arch_common.parse_args(__doc__)
    common.require_numpy()
    if not os.path.isdir(os.path.join(args.node_modules, "node-llama-cpp")):
        common.fail(f"{args.node_modules}/node-llama-cpp is missing: run tools/setup.sh --test "
                    "(or npm ci in tests/node)")
    import numpy as np
    import arch_models

    cfg = dict(arch_models.MODELS["llama"][0])
    cfg.update({"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2})
    hf = os.path.join(args.workdir, "llama256-hf")
    arch_models.make_folder(cfg, hf, seed=3)
    vocab = os.path.join(args.shared, "vocab", "ggml-vocab-llama-spm.gguf")
    common.require_files(vocab)
    f32 = os.path.join(args.workdir, "llama256.gguf")
    p = subprocess.run([args.make_gguf, hf, f32, vocab], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        common.fail(f"hw_make_gguf failed: {p.stderr.decode(errors='replace')}")
    files = {}
    for t in TYPES:
        out = os.path.join(args.workdir, f"llama256-{t}.gguf")
        p = common.run_cli(args.headwise, ["convert", f32, "--weights", t, "-o", out])
        log = p.stderr.decode() + p.stdout.decode()
        for want in EXPECT_TYPES.get(t, []):
            if f"-> {want}" not in log:
                common.fail(f"convert --weights {t} wrote no {want} tensor:\n{log}")
        files[t] = out
    import gguf_rewrite
    for t in REWRITTEN:
        files[t] = os.path.join(args.workdir, f"llama256-{t}.gguf")
        rewritten = gguf_rewrite.rewrite_as(f32, files[t], t)
        if "blk.0.attn_q.weight" not in rewritten or "token_embd.weight" not in rewritten:
            common.fail(f"gguf_rewrite as {t} rewrote only {rewritten}")
    lc = llamacpp(args, list(files.values()))
    failures = []
    for t, gguf in files.items():
        ids, ref = lc[gguf]
        q, ref, kl, agree, clear, good = agreement(args, gguf, ids, ref)
        print(f"  {t:7s}: KL max {kl.max():.2e} mean {kl.mean():.2e}, max |dp| {np.abs(q - ref).max():.2e}, "
              f"top-1 {agree.mean():.2f} (max p {ref.max(1).mean():.2f} on average)")
        if not good:
            failures.append(f"{t}: KL max {kl.max():.2e} mean {kl.mean():.2e}, "
                            f"top-1 disagreements {int((~agree[clear]).sum())}")
    ids, _ = lc[files["q5_k_m"]]
    lf = arch_common.headwise_logits(args, f32, ids)
    lf = lf - lf.max(1, keepdims=True)
    pf = np.exp(lf) / np.exp(lf).sum(1, keepdims=True)
    own = {}
    for t, gguf in files.items():
        lq = arch_common.headwise_logits(args, gguf, ids)
        lq = lq - lq.max(1, keepdims=True)
        lq = lq - np.log(np.exp(lq).sum(1, keepdims=True))
        own[t] = float((pf * (np.log(np.maximum(pf, 1e-30)) - lq)).sum(1).mean())
    print("  headwise against its own f32: mean KL " + ", ".join(f"{t} {v:.2e}" for t, v in own.items()))
    if not own["q5_k_m"] < 0.5 * own["q4_k_m"]:
        failures.append(f"q5_k_m's mean KL to f32 {own['q5_k_m']:.3g} is not under half of q4_k_m's {own['q4_k_m']:.3g}")
    if not own["q5_0"] < 0.5 * own["q4_0"]:
        failures.append(f"q5_0's mean KL to f32 {own['q5_0']:.3g} is not under half of q4_0's {own['q4_0']:.3g}")
    if not own["q5_1"] < 0.5 * own["q4_1"]:
        failures.append(f"q5_1's mean KL to f32 {own['q5_1']:.3g} is not under half of q4_1's {own['q4_1']:.3g}")
    if not own["iq4_xs"] < own["q4_0"]:
        failures.append(f"iq4_xs's mean KL to f32 {own['iq4_xs']:.3g} is not under q4_0's {own['q4_0']:.3g}")
    if not own["f16"] < F16_OWN_KL:
        failures.append(f"f16's mean KL to f32 {own['f16']:.3g} is not under {F16_OWN_KL:g}")
    if failures:
        common.fail("; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
