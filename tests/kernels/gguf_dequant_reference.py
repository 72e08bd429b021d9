#!/usr/bin/env python3
"""Independent check of headwise's weight-type semantics against gguf-py, the NumPy
GGUF library in the llama.cpp source node-llama-cpp 3.21.1 ships
(tests/node/node_modules/node-llama-cpp/llama/gitRelease.bundle).

The bundle is cloned into a temporary folder (nothing enters the project); for each
<type>.bin (rows of random blocks) in --dir, gguf-py dequantizes it and the result must
equal headwise's dequantization <type>.f32 to float32 rounding (both compute
d·sc·q − dmin·m in float32, possibly in another order: 4 ulps of the row's largest value).
Exit 0 on agreement, 1 on a mismatch, 2 when the reference cannot be set up.
"""
import argparse
import os
import subprocess
import sys
import tempfile

TYPES = {"f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q2_K": "Q2_K", "q3_K": "Q3_K", "q4_K": "Q4_K", "q5_K": "Q5_K",
         "q6_K": "Q6_K", "iq4_XS": "IQ4_XS",
         # IQ4_NL blocks re-encoded as Q8_0 (iq4_nl_to_q8_0), then dequantized
         "iq4_nl": "IQ4_NL",
         # Q5_0 blocks re-encoded as Q8_0 (kernels/quant/quant.hpp: q5_0_to_q8_0), then dequantized
         "q5_0": "Q5_0",
         # Q4_1 / Q5_1 as the products take them (Q8_0 rows plus one offset a block: c =
         # m + o·d rounded once, d·(q − o) + c rounded again) and dequantized directly
         "q4_1": "Q4_1", "q5_1": "Q5_1", "q4_1_direct": "Q4_1", "q5_1_direct": "Q5_1"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    if not os.path.isfile(a.bundle):
        print(f"gguf_dequant_reference: {a.bundle} is missing: run tools/setup.sh --test "
              "(npm ci in tests/node) first", file=sys.stderr)
        return 2
    import numpy as np
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "llama.cpp")
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", a.bundle, src], check=True)
        # only gguf-py is needed
        subprocess.run(["git", "-C", src, "checkout", "--quiet", "HEAD", "--", "gguf-py"], check=True)
        sys.path.insert(0, os.path.join(src, "gguf-py"))
        from gguf import quants, GGMLQuantizationType
        bad = 0
        for name, gname in TYPES.items():
            path = os.path.join(a.dir, name + ".bin")
            raw = np.fromfile(path, dtype=np.uint8)
            ours = np.fromfile(os.path.join(a.dir, name + ".f32"), dtype=np.float32)
            rows = int(open(os.path.join(a.dir, name + ".rows")).read())
            ref = quants.dequantize(raw.reshape(rows, -1), GGMLQuantizationType[gname]).astype(np.float32)
            ours = ours.reshape(ref.shape)
            scale = np.abs(ref).max(axis=1, keepdims=True)
            err = np.abs(ours - ref) / (np.spacing(scale) + 1e-38)
            worst = float(err.max())
            ok = worst <= 4
            print(f"  {name:5s} {ref.size} values: worst |headwise - gguf-py| = {worst:.1f} ulps of the row max"
                  f" ({'ok' if ok else 'MISMATCH'})")
            bad += not ok
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
