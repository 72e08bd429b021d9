#!/usr/bin/env python3
"""Greedy generation reproduces the reference C implementation byte for byte.

`headwise run stories260K.bin --tokenizer tok512.bin --temp 0 -n 200` (no prompt) must
print exactly ../shared/models/stories260K/expected-greedy-200.txt on stdout (what
llama2.c's run.c prints), both from the checkpoint and from a `headwise convert`ed
folder, for --threads 1 and 2 and every HEADWISE_ISA the CPU supports. Tolerance: none
(exact bytes). On a mismatch the first differing byte offset and its context are shown.
"""
import os
import sys

import e2e_common as common

STEPS = 200


def first_difference(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n if len(a) != len(b) else -1


def compare(got, expected, where):
    i = first_difference(got, expected)
    if i < 0:
        return True
    lo = max(0, i - 40)
    print(f"FAIL: {where}: stdout differs from the expected text at byte {i} "
          f"(got {len(got)} bytes, expected {len(expected)})\n"
          f"  got:      {got[lo:i + 40]!r}\n"
          f"  expected: {expected[lo:i + 40]!r}")
    return False


def main():
    args = common.parse_args(__doc__)
    models = common.models_dir(args.shared)
    ckpt = os.path.join(models, "stories260K/stories260K.bin")
    tok = os.path.join(models, "stories260K/tok512.bin")
    expected_path = os.path.join(models, "stories260K/expected-greedy-200.txt")
    common.require_files(ckpt, tok, expected_path)
    with open(expected_path, "rb") as f:
        expected = f.read()

    converted = common.convert_llama2c(args.headwise, ckpt, tok,
                                       os.path.join(args.workdir, "stories260K"))
    variants = [("checkpoint", [ckpt, "--tokenizer", tok]), ("converted", [converted])]
    ok, runs = True, 0
    for isa in common.supported_isas():
        for threads in common.THREADS:
            for label, model_args in variants:
                p = common.run_cli(args.headwise, ["run"] + model_args +
                                   ["--temp", 0, "-n", STEPS, "--threads", threads], isa=isa)
                where = f"{label} HEADWISE_ISA={isa} --threads {threads}"
                runs += 1
                if compare(p.stdout, expected, where):
                    print(f"  {where}: identical ({len(expected)} bytes)")
                else:
                    ok = False
    if not ok:
        return 1
    print(f"PASS: {runs} runs print {expected_path} byte for byte")
    return 0


if __name__ == "__main__":
    sys.exit(main())
