#!/usr/bin/env python3
"""A GPT-2-style model described in model.json runs to the same logits as PyTorch.

gpt2_reference.py writes a 2-layer GPT-2 (d_model 768, 12 heads, vocab 1024, context
128; LayerNorm, learned positions, biases, fused QKV in Conv1D [in][out] layout, GELU
tanh, tied classifier) with seeded random weights to WORKDIR/model.{json,safetensors}.
`headwise run WORKDIR --tokens <100 random ids> -n 100 --logits out.npy` must give the
logits of all 100 positions within 1e-4 (max abs) of the float64 PyTorch forward pass
computed from the weights read back from the file, for every HEADWISE_ISA the CPU
supports with --threads 2, and the widest ISA with --threads 1 as well.
"""
import os
import sys

import e2e_common as common

TOLERANCE = 1e-4
N_TOKENS = 100
SEED = 1234


def main():
    args = common.parse_args(__doc__)
    common.require_numpy()
    common.require_torch()
    import numpy as np
    import torch
    import gpt2_reference as gpt2

    cfg = gpt2.CONFIG
    gpt2.write_model(args.workdir, cfg, SEED)
    # The reference reads the file back, so both sides use exactly the bytes on disk.
    weights = gpt2.read_safetensors(os.path.join(args.workdir, "model.safetensors"))
    g = torch.Generator().manual_seed(SEED + 1)
    tokens = torch.randint(0, cfg["vocab_size"], (N_TOKENS,), generator=g).tolist()
    ref = gpt2.forward(weights, tokens, cfg)
    print(f"reference logits of {N_TOKENS} positions in [{ref.min():.3f}, {ref.max():.3f}], "
          f"std {ref.std():.3f}")

    worst = 0.0
    out = os.path.join(args.workdir, "logits.npy")
    isas = common.supported_isas()
    # Every ISA with 2 threads, and the widest with 1 too: a 100-token prefill of this
    # model takes seconds, and the thread split is the same code for every ISA.
    runs = [(isa, 2) for isa in isas] + [(isas[0], 1)]
    for isa, threads in runs:
        if os.path.exists(out):
            os.remove(out)
        common.run_cli(args.headwise, ["run", args.workdir, "--tokens", ",".join(map(str, tokens)),
                                       "-n", N_TOKENS, "--temp", 0, "--threads", threads,
                                       "--logits", out], isa=isa)
        got = np.load(out)
        where = f"HEADWISE_ISA={isa} --threads {threads}"
        if got.dtype != np.float32 or got.shape != ref.shape:
            common.fail(f"{where}: logits are {got.dtype} {got.shape}, expected float32 {ref.shape}")
        err = np.abs(got.astype(np.float64) - ref)
        max_err = float(err.max())
        pos, col = divmod(int(err.argmax()), ref.shape[1])
        print(f"  {where}: max abs error {max_err:.3g} (position {pos}, token {col})")
        if not max_err <= TOLERANCE:  # also catches NaN
            common.fail(f"{where}: max abs error {max_err:.3g} > {TOLERANCE} at position {pos}, "
                        f"token {col}: headwise {got[pos, col]!r}, reference {ref[pos, col]!r}")
        worst = max(worst, max_err)
    print(f"PASS: GPT-2 logits max abs error {worst:.3g} <= {TOLERANCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
