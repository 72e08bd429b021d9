"""Plumbing shared by the architecture checks: arguments, and making each test model
once per work folder (HF folder by arch_models.py, GGUF by hw_make_gguf)."""
import argparse
import os
import shutil
import subprocess

import e2e_common as common


def parse_args(doc):
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--headwise", required=True)
    ap.add_argument("--make-gguf", required=True, help="the hw_make_gguf tool")
    ap.add_argument("--shared", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    return args


def make_models(args, names):
    """{name: (hf_dir, gguf_path)} for the given MODELS names, freshly written."""
    import arch_models
    out = {}
    for name in names:
        hf = os.path.join(args.workdir, name + "-hf")
        arch_models.make(name, hf, seed=len(name))
        vocab = os.path.join(args.shared, "vocab", arch_models.MODELS[name][1])
        # The Llama 2 vocabulary models get Llama 2's tokenizer.json (the same vocabulary
        # as the GGUF's), so both formats run text prompts.
        tok = os.path.join(args.node_modules, "@lenml", "tokenizer-llama2", "models")
        if vocab.endswith("llama-spm.gguf") and os.path.isdir(tok):
            for f in ("tokenizer.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(tok, f), os.path.join(hf, f))
        common.require_files(vocab)
        gguf = os.path.join(args.workdir, name + ".gguf")
        p = subprocess.run([args.make_gguf, hf, gguf, vocab], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            common.fail(f"hw_make_gguf {hf} failed: {p.stderr.decode(errors='replace')}")
        out[name] = (hf, gguf)
    return out


def headwise_logits(args, model, ids):
    """All-position logits of `ids` through `headwise run MODEL --tokens ... --logits`."""
    import numpy as np
    npy = os.path.join(args.workdir, "logits.npy")
    if os.path.exists(npy):
        os.remove(npy)
    common.run_cli(args.headwise, ["run", model, "--tokens", ",".join(map(str, ids)), "-n", len(ids),
                                   "--logits", npy, "--threads", 2, "--temp", 0])
    return np.load(npy).astype(np.float64)
