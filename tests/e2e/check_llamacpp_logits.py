#!/usr/bin/env python3
"""headwise against llama.cpp on the same GGUF files.

The GGUF files of every architecture (arch_models.py's random-weight models converted
by the library's GGUF writer, with the real Llama 2 / GPT-2 vocabularies of
../shared/vocab) are run by llama.cpp (node-llama-cpp 3.21.1's prebuilt CPU build,
tests/node/llamacpp_probs.mjs): it tokenizes a text with the file's vocabulary and
gives its next-token distribution after each of 100 positions. headwise runs the same
ids (`run --tokens --logits`) and its softmax must match at every position:

  max |p_headwise - p_llama.cpp| <= 3e-3 and KL(p_llama.cpp || p_headwise) <= 1e-3 nats,
  and the same most likely token wherever llama.cpp's top two differ by more than 1e-2.

Why not tighter: llama.cpp stores its KV cache in f16 (a relative rounding of ~5e-4 on
every key and value) and runs its matrix products with f16-converted activations on
some paths; with logits of a few units that moves probabilities by up to ~1.7e-3
(measured: 3e-4 .. 1.7e-3 over the models, KL <= 2.2e-4). The weights are scaled
(arch_models.py) so the distributions are peaked (average top probability 0.2 .. 0.96),
not flat, so a wrong layout (RoPE pairing, q/k permutation, a transposed weight, a
missing bias or norm), which changes logits by O(1), cannot hide under the tolerance.
"""
import json
import os
import subprocess
import sys

import arch_common
import e2e_common as common

MAX_ABS = 3e-3
MAX_KL = 1e-3
TEXT = ("Once upon a time, in a quiet village by the sea, an old fisherman told stories "
        "to the children: about ships (3 of them!), storms in 1923, the café on the hill, "
        "def main(): return 42; and a cat named Ünal who ate 12.5 fish a day. "
        "The end? Not quite - there was more, much more, to tell.")


def llamacpp(args, ggufs):
    """{gguf path: (ids, probabilities [100][V])} from one node-llama-cpp process."""
    node_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "node")
    text_file = os.path.join(args.workdir, "prompt.txt")
    with open(text_file, "w") as f:
        f.write(TEXT)
    cmd = ["node", os.path.join(node_dir, "llamacpp_probs.mjs"), text_file, "100", args.workdir] + ggufs
    for attempt in (1, 2):  # its first start runs a binding self-test that can fail under load
        p = subprocess.run(cmd, cwd=node_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=500)
        if p.returncode == 0:
            break
    if p.returncode != 0:
        common.fail(f"llama.cpp (node-llama-cpp) failed: {p.stderr.decode(errors='replace')[-2000:]}")
    import numpy as np
    out = {}
    for gguf in ggufs:
        prefix = os.path.join(args.workdir, os.path.basename(gguf))
        with open(prefix + ".json") as f:
            meta = json.load(f)
        probs = np.fromfile(prefix + ".bin", dtype="<f4").reshape(len(meta["ids"]), meta["vocab"])
        out[gguf] = (meta["ids"], probs.astype(np.float64))
    return out


def main():
    args = arch_common.parse_args(__doc__)
    common.require_numpy()
    if not os.path.isdir(os.path.join(args.node_modules, "node-llama-cpp")):
        common.fail(f"{args.node_modules}/node-llama-cpp is missing: run tools/setup.sh --test "
                    "(or npm ci in tests/node)")
    import numpy as np
    import arch_models

    # Mistral is Llama's GGUF architecture with other sizes: left to e2e.architectures to
    # keep this check's time down (llama.cpp's sorted probability maps cost seconds each).
    models = arch_common.make_models(args, [m for m in arch_models.MODELS if m != "mistral"])
    lc = llamacpp(args, [g for _, g in models.values()])
    failures = []
    for name, (_, gguf) in models.items():
        ids, ref = lc[gguf]
        logits = arch_common.headwise_logits(args, gguf, ids)
        V = logits.shape[1]
        if ref.shape[1] < V:  # llama.cpp lists only ids it knows; pad the rest with 0
            ref = np.pad(ref, ((0, 0), (0, V - ref.shape[1])))
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        diff = np.abs(p - ref).max()
        kl = (ref * (np.log(np.maximum(ref, 1e-30)) - np.log(np.maximum(p, 1e-30)))).sum(1).max()
        top = np.sort(ref, 1)
        clear = (top[:, -1] - top[:, -2]) > 1e-2
        agree = (p.argmax(1) == ref.argmax(1))
        print(f"{name:8s}: max |dp| {diff:.2e}, max KL {kl:.2e}, top-1 {agree.mean():.2f} "
              f"(max p {ref.max(1).mean():.2f} on average)")
        if not (diff <= MAX_ABS and kl <= MAX_KL and agree[clear].all()):
            failures.append(f"{name}: max |dp| {diff:.2e}, KL {kl:.2e}, top-1 disagreements "
                            f"{int((~agree[clear]).sum())}")
    if failures:
        common.fail("; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
