#!/usr/bin/env python3
"""Broken GGUF files and Hugging Face folders: `headwise run` must exit 1 with a message
naming the file and the culprit (never crash, never run).

Starts from arch_models.py's Llama (one safetensors file) and Llama 3 (three shards)
checkpoints, and their GGUF conversions; the unbroken ones must run (exit 0), so each
failure is caused by the one thing its case breaks.
"""
import json
import os
import shutil
import struct
import sys

import arch_common
import e2e_common as common

RUN_ARGS = ["--tokens", "1,2,3", "-n", 3, "--temp", 0, "--threads", 1]


def patch(src, dst, edit):
    with open(src, "rb") as f:
        b = bytearray(f.read())
    edit(b)
    with open(dst, "wb") as f:
        f.write(b)
    return dst


def tensor_type_at(b, name):
    """Offset of the ggml type field of tensor `name`'s info (2-D tensors)."""
    key = struct.pack("<Q", len(name)) + name.encode()
    i = b.find(key)
    assert i >= 0, name
    return i + len(key) + 4 + 2 * 8


def main():
    args = arch_common.parse_args(__doc__)
    common.require_numpy()
    import arch_models
    models = arch_common.make_models(args, ["llama", "llama3"])
    hf, gguf = models["llama"]
    hf3, _ = models["llama3"]
    w = args.workdir
    cases = []

    for good in (hf, gguf, hf3):
        common.run_cli(args.headwise, ["run", good] + RUN_ARGS)

    with open(gguf, "rb") as f:
        size = len(f.read())
    cases.append(("truncated GGUF", patch(gguf, os.path.join(w, "truncated.gguf"), lambda b: b.__delitem__(slice(size // 2, None))),
                  ["truncated.gguf", "outside the file"]))
    cases.append(("wrong magic", patch(gguf, os.path.join(w, "magic.gguf"), lambda b: b.__setitem__(slice(0, 4), b"GGML")),
                  ["magic.gguf", "not a GGUF file"]))

    def arch(b):
        i = b.find(b"general.architecture")
        j = b.find(b"llama", i + 20)
        b[j:j + 5] = b"bloom"
    cases.append(("unknown GGUF architecture", patch(gguf, os.path.join(w, "arch.gguf"), arch),
                  ["arch.gguf", "'bloom'", "llama", "qwen3", "gpt2"]))

    def iq2(b):  # (Q8_0 and the other low-bit types of kernels/quant load since issue 10, Q5_0/Q4_1/Q5_1/IQ4_NL through Q8_0)
        struct.pack_into("<I", b, tensor_type_at(b, "blk.1.ffn_up.weight"), 16)  # IQ2_XXS
    cases.append(("unsupported tensor type", patch(gguf, os.path.join(w, "iq2.gguf"), iq2),
                  ["iq2.gguf", "blk.1.ffn_up.weight", "IQ2_XXS"]))

    # Q5_0 tensors are re-encoded as Q8_0 copies at load: a file whose Q5_0 tensors all
    # point at the same bytes must not make those copies grow past the file's size.
    import gguf_rewrite
    q5_file = os.path.join(w, "q5_0.gguf")
    q5_names = gguf_rewrite.rewrite_as_q5_0(gguf, q5_file)
    common.run_cli(args.headwise, ["run", q5_file] + RUN_ARGS)  # the file itself runs

    def overlap(b):
        at = tensor_type_at(b, "token_embd.weight")
        ne0, ne1 = struct.unpack_from("<QQ", b, at - 16)
        for name in q5_names:
            at = tensor_type_at(b, name)
            struct.pack_into("<QQ", b, at - 16, ne0, ne1)  # token_embd's shape, its bytes
            struct.pack_into("<Q", b, at + 4, 0)           # all at the data's start
    cases.append(("overlapping Q5_0 tensors", patch(q5_file, os.path.join(w, "q5_overlap.gguf"), overlap),
                  ["q5_overlap.gguf", "Q5_1 tensors", "exceed the file", "overlap"]))
    # Q5_1 (and Q4_1) tensors are re-encoded by the plan: the same bound.
    q51_file = os.path.join(w, "q5_1.gguf")
    q5_names = gguf_rewrite.rewrite_as(gguf, q51_file, "q5_1")
    common.run_cli(args.headwise, ["run", q51_file] + RUN_ARGS)
    # IQ4_NL tensors are re-encoded as Q8_0 copies at load, as Q5_0's: the same bound.
    iq4nl_file = os.path.join(w, "iq4_nl.gguf")
    iq4nl_names = gguf_rewrite.rewrite_as(gguf, iq4nl_file, "iq4_nl")
    common.run_cli(args.headwise, ["run", iq4nl_file] + RUN_ARGS)
    # convert reads the types it does not write (to_floats: Q5_0, Q4_1, Q5_1, IQ4_NL) as well
    for src in (q5_file, q51_file, iq4nl_file):
        out = src.replace(".gguf", "-as-q8_0.gguf")
        common.run_cli(args.headwise, ["convert", src, "--weights", "q8_0", "-o", out])
        common.run_cli(args.headwise, ["run", out] + RUN_ARGS)
    cases.append(("overlapping Q5_1 tensors", patch(q51_file, os.path.join(w, "q51_overlap.gguf"), overlap),
                  ["q51_overlap.gguf", "Q5_1 tensors", "exceed the file", "overlap"]))

    q5_names = iq4nl_names
    cases.append(("overlapping IQ4_NL tensors", patch(iq4nl_file, os.path.join(w, "iq4nl_overlap.gguf"), overlap),
                  ["iq4nl_overlap.gguf", "IQ4_NL", "exceed the file", "overlap"]))

    def iq3(b):
        struct.pack_into("<I", b, tensor_type_at(b, "blk.0.ffn_down.weight"), 21)  # IQ3_S
    cases.append(("unsupported tensor type (IQ3_S)", patch(gguf, os.path.join(w, "iq3.gguf"), iq3),
                  ["iq3.gguf", "blk.0.ffn_down.weight", "IQ3_S"]))

    # HF: unknown model_type
    d = os.path.join(w, "bert-hf")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(hf, d)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    cfg["model_type"] = "bert"
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    cases.append(("unknown HF architecture", d, ["config.json", "'bert'", "qwen2", "mistral"]))

    # HF: a missing shard
    d = os.path.join(w, "shard-hf")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(hf3, d)
    os.remove(os.path.join(d, "model-00002-of-00003.safetensors"))
    cases.append(("missing shard", d, ["model-00002-of-00003.safetensors", "model.safetensors.index.json"]))

    # A tensor of the wrong shape, in both formats (HF folder, then converted).
    d = os.path.join(w, "shape-hf")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(hf, d)
    import numpy as np
    tensors = [(n, np.concatenate([a, a[:1]]) if n == "model.layers.1.input_layernorm.weight" else a)
               for n, a in arch_models.read_safetensors(os.path.join(hf, "model.safetensors")).items()]
    arch_models.write_safetensors(os.path.join(d, "model.safetensors"), tensors)
    cases.append(("wrong shape (HF)", d, ["model.layers.1.input_layernorm.weight", "[65]", "[64]"]))
    bad_gguf = os.path.join(w, "shape.gguf")
    import subprocess
    subprocess.run([args.make_gguf, d, bad_gguf], check=True)
    cases.append(("wrong shape (GGUF)", bad_gguf, ["shape.gguf", "blk.1.attn_norm.weight", "[65]", "[64]"]))

    failures = 0
    for name, model, words in cases:
        p = common.run_cli(args.headwise, ["run", model] + RUN_ARGS, check=False)
        err = p.stderr.decode(errors="replace").strip()
        missing = [x for x in words if x not in err]
        ok = p.returncode == 1 and not missing
        print(f"{'PASS' if ok else 'FAIL'} {name}: exit {p.returncode}: {err}")
        if missing:
            print(f"     missing from the message: {missing}")
        failures += not ok
    if failures:
        common.fail(f"{failures} case(s) failed")
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
