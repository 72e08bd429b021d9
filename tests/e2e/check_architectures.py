#!/usr/bin/env python3
"""Every architecture, both formats, against an independent float64 PyTorch forward.

For each model of arch_models.MODELS (Llama, Llama 3 with rope scaling and a sharded
checkpoint, Mistral, Qwen2, Qwen3, GPT-2; random weights), the logits of all 100
positions of a random prompt from `headwise run HF_FOLDER --logits` and from
`headwise run FILE.gguf --logits` (the same weights converted by the library's GGUF
writer, with llama.cpp's permuted Llama q/k rows) must both match the float64
reference: max |headwise - reference| <= 1e-4 * max |reference| per model. headwise
computes in float32 (oneDNN GEMMs, fp32 softmax/RMSNorm/RoPE tables); on these 2-layer
models its error measures at ~1e-6 of the logit range, so 1e-4 leaves two orders of
margin while any wrong layout, RoPE pairing, bias or norm gives errors of order 1.
"""
import sys

import arch_common
import e2e_common as common

TOL = 1e-4


def main():
    args = arch_common.parse_args(__doc__)
    common.require_numpy()
    common.require_torch()
    import numpy as np
    import arch_models

    models = arch_common.make_models(args, list(arch_models.MODELS))
    rng = np.random.default_rng(7)
    failures = []
    for name, (hf, gguf) in models.items():
        cfg = arch_models.MODELS[name][0]
        ids = rng.integers(0, cfg["vocab_size"], 100).tolist()
        ref = arch_models.forward(hf, ids)
        scale = np.abs(ref).max()
        for label, path in (("hf", hf), ("gguf", gguf)):
            got = arch_common.headwise_logits(args, path, ids)
            err = np.abs(got - ref).max() / scale
            top1 = (got.argmax(1) == ref.argmax(1)).mean()
            print(f"{name:8s} {label:4s}: max |err| / max |ref| = {err:.2e}, top-1 agreement {top1:.2f}")
            if not err <= TOL:
                failures.append(f"{name} ({label}): relative error {err:.2e} > {TOL}")
    if failures:
        common.fail("; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
