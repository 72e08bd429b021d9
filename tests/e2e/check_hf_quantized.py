#!/usr/bin/env python3
"""Hugging Face GPTQ and AWQ checkpoints against a float64 forward of their exact weights.

A random-weight Llama (arch_models.py; d 256, ff 512, 4/2 heads, 2 layers) has its seven
projections per layer quantized here, with NumPy, into the layouts AutoGPTQ/GPTQModel and
AutoAWQ write (formats/hf_quantized.hpp documents them; written from those projects'
published packing, not from headwise's C++):
  gptq4       4 bits, symmetric (every zero 8, stored 7: checkpoint_format "gptq"), groups of 128
  gptq4-asym  4 bits, zeros per group and column (stored less 1), groups of 64
  gptq4-v2    4 bits, zeros as stored (checkpoint_format "gptq_v2"), one group per column (-1)
  gptq4-act   4 bits, act-order: g_idx assigns shuffled runs of 32 input rows to the groups
  gptq4-actorder  4 bits with zeros, act-order as AutoGPTQ writes it: g_idx interleaves
              the groups row by row (headwise stores the columns sorted by group and
              gathers each product's inputs in that order)
  gptq8       8 bits, symmetric (zero 128), groups of 32
  gptq8-asym  8 bits with zeros, groups of 128
  awq4        AWQ 4 bits ("gemm" packing: columns 0 2 4 6 1 3 5 7 in an int32), groups of 64
and a Qwen2 (q/k/v biases, F16 as those files store them; tied classifier) as GPTQ
4-bit symmetric and AWQ, groups of 32. For each, the exact weights w = scale * (q - zero) go into a plain F32 folder, and
`headwise run` of the quantized folder must match the float64 reference forward of that
folder (arch_models.forward) at all 100 positions of a random prompt: headwise multiplies
the weights exactly as stored (Q4_0/Q8_0 blocks, plus one f32 offset a block where the
zeros are not the centre) and rounds only its inputs to int8 per 32 (as every integer
product here does), so the only difference is that rounding (the same for 4 and 8 bits:
it is not the weights'). Measured (2026-12-07): KL(ref || headwise) mean 1.1e-4 to 7.7e-4,
max 1.6e-3 to 3.8e-3 over the variants, no top-1 disagreement where the reference's top
two differ by more than 0.05; the bounds below are 2-2.5x the largest, while a wrong nibble order
or zero (tried: AWQ's file packed in GPTQ's order, a GPTQ file's zeros read without the
+1) gives KL(mean) > 0.1. The symmetric files also go through `headwise convert` (their
layers become GGUF Q4_0 / Q8_0 tensors, the q/k rows permuted for llama.cpp's RoPE) and
the GGUF's logits must meet the same bounds (not equality: an upstream difference in the
last bit, here RoPE's pairing, can move an input across an int8 rounding boundary, by
one step of 1/127 of its block's largest value); that GGUF converted again with
`--weights f32` (every matrix's exact values) must match the float64 reference to 1e-4 of
the logits' range, as the unquantized models do (measured 3e-7 to 8e-7). Malformed variants (a g_idx
whose groups are not whole blocks of 32 rows, a group size of 48, 3 bits, bitsandbytes, mismatched shapes) must
each fail with a message naming the field or tensor.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import arch_common
import e2e_common as common

MEAN_KL, MAX_KL = 2e-3, 8e-3
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble i of an int32 holds column 8c + AWQ_ORDER[i]
LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
VARIANTS = {  # name: (method, bits, group_size, symmetric, checkpoint_format, act_order)
    "gptq4": ("gptq", 4, 128, True, "gptq", False),
    "gptq4-asym": ("gptq", 4, 64, False, "gptq", False),
    "gptq4-v2": ("gptq", 4, -1, False, "gptq_v2", False),
    "gptq4-act": ("gptq", 4, 64, True, "gptq", "runs"),
    "gptq4-actorder": ("gptq", 4, 64, False, "gptq", "rows"),
    "gptq8": ("gptq", 8, 32, True, "gptq", False),
    "gptq8-asym": ("gptq", 8, 128, False, "gptq", False),
    "awq4": ("awq", 4, 64, False, None, False),
}
# Qwen2 (q/k/v biases, stored F16 as such files store them; tied classifier; 64 wide)
QWEN2_VARIANTS = {
    "qwen2-gptq4": ("gptq", 4, 32, True, "gptq", False),
    "qwen2-awq4": ("awq", 4, 32, False, None, False),
}


def write_safetensors(path, tensors):
    """tensors: [(name, ndarray of float32, float16 or int32)]."""
    import numpy as np
    names = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("<i4"): "I32"}
    header, blobs, at = {}, [], 0
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        a = a.astype(a.dtype.newbyteorder("<"))
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.tobytes())
        at += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def quantize(w, bits, groups, G, sym, zmin):
    """w [N, K] float32, groups[k] = group of input row k -> (q [N, K], zeros [G, N], scales
    f16 [G, N], exact dequantized weights float32)."""
    import numpy as np
    N, K = w.shape
    top = 2 ** bits - 1
    q = np.zeros((N, K), np.int64)
    zeros = np.zeros((G, N), np.int64)
    scales = np.zeros((G, N), np.float16)
    for g in range(G):
        cols = np.nonzero(groups == g)[0]
        wg = w[:, cols].astype(np.float64)
        if sym:
            z = np.full(N, 2 ** (bits - 1))
            s = np.abs(wg).max(1) / (2 ** (bits - 1) - 1)
        else:
            lo, hi = np.minimum(wg.min(1), 0), np.maximum(wg.max(1), 0)
            s = (hi - lo) / top
            z = np.clip(np.round(-lo / s), zmin, top)
        s16 = s.astype(np.float16)
        s16[s16 == 0] = np.float16(1e-3)
        q[:, cols] = np.clip(np.round(wg / s16.astype(np.float64)[:, None]) + z[:, None], 0, top)
        zeros[g], scales[g] = z, s16
    deq = scales.astype(np.float64)[groups].T * (q - zeros[groups].T)
    assert np.array_equal(deq.astype(np.float32).astype(np.float64), deq)  # exact in f32
    return q, zeros, scales, deq.astype(np.float32)


def pack_along(v, bits, axis_len, order=None):
    """v [..., L] ints -> int32 [..., L / (32 / bits)], value i of each run at bits * pos(i)."""
    import numpy as np
    f = 32 // bits
    v = v.reshape(v.shape[:-1] + (axis_len // f, f)).astype(np.uint64)
    out = np.zeros(v.shape[:-1], np.uint64)
    for i in range(f):
        src = order[i] if order else i  # AWQ: nibble i holds element order[i]
        out |= v[..., src] << np.uint64(bits * i)
    return out.astype(np.uint32).view(np.int32)


def make_variant(name, spec, src_w, cfg, out_q, out_exact, rng):
    import numpy as np
    method, bits, gs, sym, fmt, act = spec
    tensors_q, tensors_x = [], []
    for tname, w in src_w.items():
        prefix = tname[:-len(".weight")] if tname.endswith(".weight") else None
        if tname.endswith(".bias") and any(tname[:-len(".bias")].endswith(l) for l in LINEARS):
            b16 = w.astype(np.float16)  # a quantized layer's bias, F16 as GPTQ/AWQ files hold it
            tensors_q.append((tname, b16))
            tensors_x.append((tname, b16.astype(np.float32)))
            continue
        if prefix is None or not any(prefix.endswith(l) for l in LINEARS):
            tensors_q.append((tname, w))
            tensors_x.append((tname, w))
            continue
        N, K = w.shape
        G = 1 if gs == -1 else K // gs
        if act == "runs":  # shuffled runs of 32 rows per group
            runs = rng.permutation(K // 32)
            groups = np.repeat(np.argsort(runs) // (gs // 32), 32).astype(np.int64)
        elif act == "rows":  # AutoGPTQ's act-order: group of row k = (its rank in the order) // gs
            groups = (np.argsort(rng.permutation(K)) // gs).astype(np.int64)
        else:
            groups = np.zeros(K, np.int64) if gs == -1 else np.arange(K) // gs
        zmin = 1 if (method == "gptq" and fmt == "gptq") else 0  # stored zero - 1 must be >= 0
        q, zeros, scales, deq = quantize(w, bits, groups, G, sym, zmin)
        tensors_x.append((tname, deq))
        stored_z = zeros - (1 if (method == "gptq" and fmt == "gptq" and not os.environ.get("HW_TEST_GPTQ_NO_MINUS1")) else 0)
        if method == "gptq":
            qweight = pack_along(q, bits, K).T.copy()  # [N, K/f] -> [K/f, N]
            qzeros = pack_along(stored_z, bits, N)
            tensors_q += [(prefix + ".qweight", qweight), (prefix + ".qzeros", qzeros),
                          (prefix + ".scales", scales), (prefix + ".g_idx", groups.astype(np.int32))]
        else:
            order = None if os.environ.get("HW_TEST_AWQ_PLAIN_ORDER") else AWQ_ORDER  # (the mutation check)
            qweight = pack_along(q.T.copy(), 4, N, order)  # [K, N/8]
            qzeros = pack_along(stored_z, 4, N, order)
            tensors_q += [(prefix + ".qweight", qweight), (prefix + ".qzeros", qzeros), (prefix + ".scales", scales)]
    qc = {"quant_method": method, "bits": bits, "group_size": gs}
    if method == "gptq":
        qc.update({"desc_act": bool(act), "sym": sym, "checkpoint_format": fmt})
    else:
        qc.update({"version": "gemm", "zero_point": True})
    for folder, tensors, qcfg in ((out_q, tensors_q, qc), (out_exact, tensors_x, None)):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        c = dict(cfg)
        if qcfg:
            c["quantization_config"] = qcfg
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(c, f, indent=1)
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors)


def kl_stats(ref, got):
    import numpy as np
    def softmax(x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    p, q = softmax(ref), softmax(got)
    kl = (p * (np.log(np.maximum(p, 1e-300)) - np.log(np.maximum(q, 1e-300)))).sum(1)
    top = np.sort(p, 1)
    clear = top[:, -1] - top[:, -2] > 0.05
    agree = p.argmax(1) == q.argmax(1)
    return kl, agree, clear


def expect_error(args, folder, words, failures):
    p = common.run_cli(args.headwise, ["run", folder, "--tokens", "1,2", "-n", 2], check=False)
    err = p.stderr.decode(errors="replace")
    ok = p.returncode != 0 and all(w in err for w in words) and "Traceback" not in err
    print(f"  {os.path.basename(folder)}: exit {p.returncode}: {err.strip().splitlines()[-1] if err.strip() else ''}")
    if not ok:
        failures.append(f"{folder}: expected a failure naming {words}, got exit {p.returncode}: {err!r}")


def main():
    args = arch_common.parse_args(__doc__)
    common.require_numpy()
    common.require_torch()
    import numpy as np
    import arch_models

    cfg = dict(arch_models.MODELS["llama"][0])
    cfg.update({"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2})
    qwen2 = dict(arch_models.MODELS["qwen2"][0])
    rng = np.random.default_rng(11)
    ids = rng.integers(0, cfg["vocab_size"], 100).tolist()
    failures = []
    runs = []
    for label, c, variants in (("llama256", cfg, VARIANTS), ("qwen2", qwen2, QWEN2_VARIANTS)):
        src = os.path.join(args.workdir, label + "-hf")
        arch_models.make_folder(c, src, seed=5)
        runs += [(name, spec, c, arch_models.load(src)[1]) for name, spec in variants.items()]
    for name, spec, cfg, weights in runs:
        ids = ids if cfg["vocab_size"] > max(ids) else [i % cfg["vocab_size"] for i in ids]
        qdir, xdir = os.path.join(args.workdir, name), os.path.join(args.workdir, name + "-exact")
        make_variant(name, spec, weights, cfg, qdir, xdir, rng)
        ref = arch_models.forward(xdir, ids)
        got = arch_common.headwise_logits(args, qdir, ids)
        kl, agree, clear = kl_stats(ref, got)
        bad = int((~agree[clear]).sum())
        print(f"{name:10s}: KL mean {kl.mean():.2e} max {kl.max():.2e}, top-1 {agree.mean():.2f} "
              f"({bad} disagreements where clear)")
        if not (kl.mean() <= MEAN_KL and kl.max() <= MAX_KL and bad == 0):
            failures.append(f"{name}: KL mean {kl.mean():.2e} (<= {MEAN_KL}), max {kl.max():.2e} (<= {MAX_KL}), "
                            f"{bad} clear top-1 disagreements")
        if spec[3] or spec[5] == "rows":  # symmetric: GGUF Q4_0 / Q8_0; act-order by row: F32
            gguf = os.path.join(args.workdir, name + ".gguf")
            vocab = os.path.join(args.shared, "vocab", "ggml-vocab-llama-spm.gguf" if cfg["model_type"] == "llama"
                                 else "ggml-vocab-gpt-2.gguf")
            common.run_cli(args.headwise, ["convert", qdir, "-o", gguf, "--vocab", vocab])
            kl, agree, clear = kl_stats(ref, arch_common.headwise_logits(args, gguf, ids))
            bad = int((~agree[clear]).sum())
            print(f"{name:10s}: headwise convert's GGUF: KL mean {kl.mean():.2e} max {kl.max():.2e}, "
                  f"{bad} disagreements where clear")
            if not (kl.mean() <= MEAN_KL and kl.max() <= MAX_KL and bad == 0):
                failures.append(f"{name}: the converted GGUF: KL mean {kl.mean():.2e}, max {kl.max():.2e}, "
                                f"{bad} clear top-1 disagreements")
            # --weights f32 writes the exact values: the fp32 path then matches the float64
            # reference as the unquantized models do (check_architectures.py's 1e-4).
            f32 = os.path.join(args.workdir, name + "-f32.gguf")
            common.run_cli(args.headwise, ["convert", gguf, "--weights", "f32", "-o", f32])
            err = np.abs(arch_common.headwise_logits(args, f32, ids) - ref).max() / np.abs(ref).max()
            print(f"{name:10s}: its --weights f32 copy: max |err| / max |ref| {err:.1e}")
            if not err <= 1e-4:
                failures.append(f"{name}: convert --weights f32 of its GGUF: relative error {err:.1e}")

    # Malformed files: each refused by name.
    base = os.path.join(args.workdir, "gptq4-asym")

    def variant(tag, edit_cfg=None, edit_tensors=None):
        d = os.path.join(args.workdir, "bad-" + tag)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        if edit_cfg:
            with open(os.path.join(d, "config.json")) as f:
                c = json.load(f)
            edit_cfg(c["quantization_config"])
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(c, f)
        if edit_tensors:
            t = {k: np.array(v) for k, v in arch_models.read_safetensors(os.path.join(d, "model.safetensors")).items()}
            edit_tensors(t)
            write_safetensors(os.path.join(d, "model.safetensors"), list(t.items()))
        return d

    def split_run(t):
        t["model.layers.0.self_attn.q_proj.g_idx"][5] = 1
    def bad_zeros(t):
        t["model.layers.1.mlp.up_proj.qzeros"] = t["model.layers.1.mlp.up_proj.qzeros"][:, :-1].copy()
    def g_range(t):
        t["model.layers.0.mlp.down_proj.g_idx"][:] = 99
    def f32_scales(t):
        t["model.layers.0.self_attn.k_proj.scales"] = t["model.layers.0.self_attn.k_proj.scales"].astype(np.float32)
    expect_error(args, variant("split", edit_tensors=split_run), ["q_proj", "not multiples of 32"], failures)
    expect_error(args, variant("zeros", edit_tensors=bad_zeros), ["up_proj", "qzeros"], failures)
    expect_error(args, variant("grange", edit_tensors=g_range), ["down_proj", "g_idx[0] = 99"], failures)
    expect_error(args, variant("scales", edit_tensors=f32_scales), ["k_proj.scales", "F16"], failures)
    expect_error(args, variant("gs48", edit_cfg=lambda q: q.update(group_size=48)), ["group_size 48"], failures)
    expect_error(args, variant("bits3", edit_cfg=lambda q: q.update(bits=3)), ["bits 3"], failures)
    expect_error(args, variant("bnb", edit_cfg=lambda q: q.update(quant_method="bitsandbytes")),
                 ["quant_method 'bitsandbytes'"], failures)
    expect_error(args, variant("v3", edit_cfg=lambda q: q.update(checkpoint_format="marlin")),
                 ["checkpoint_format 'marlin'"], failures)
    if failures:
        common.fail("; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
