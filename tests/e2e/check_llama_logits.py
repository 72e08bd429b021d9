#!/usr/bin/env python3
"""headwise run's logits for the real llama2.c models match an independent float64 oracle.

For stories260K (GQA, context 512) and aidreams260K (MHA, context 128), a prompt of at
least 64 tokens (fewer than the context) is run through `headwise run ... --temp 0
--logits out.npy` three ways: the checkpoint with --prompt TEXT, the checkpoint with
--tokens IDS (the ids of the independent Python tokenizer, tests/runtime/
tokenizer_reference.py), and a `headwise convert`ed folder with --prompt TEXT; each for
--threads 1 and 2 and every HEADWISE_ISA the CPU supports. Checks:
  * the logits of every prompt position are within 1e-4 (max abs) of llama_reference.py
    (float64 NumPy, written from ../shared/models/README.md);
  * --tokens gives bit-identical logits to --prompt (same tokens, same computation).
The oracle itself is first validated: its greedy continuation of BOS for stories260K
must reproduce expected-greedy-200.txt, the reference C implementation's output.
"""
import os
import sys

import e2e_common as common

TOLERANCE = 1e-4
MIN_PROMPT_TOKENS = 64

# Sentences in the style of the models' training texts; as many are taken as needed to
# reach MIN_PROMPT_TOKENS with each model's tokenizer.
PROMPT_SENTENCES = [
    "Once upon a time, there was a little girl named Lily.",
    "She loved to play outside in the park with her big red ball.",
    "One day, she saw a small bird sitting on a tree.",
    "The bird was sad because it could not fly.",
    "Lily wanted to help the bird, so she asked her mom for help.",
    "Her mom smiled and said, \"Let's take care of it together.\"",
    "They gave the bird some water and a warm place to sleep.",
    "The next morning, the bird sang a happy song and flew away.",
    "I dreamed I was walking in a big house full of doors.",
    "Every door opened to a different sea, and the water was warm.",
]

MODELS = [
    ("stories260K", "stories260K/stories260K.bin", "stories260K/tok512.bin"),
    ("aidreams260K", "aidreams260K/aidreams260K.bin", "aidreams260K/tok512.bin"),
]


def import_references():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "runtime"))
    import llama_reference
    import tokenizer_reference
    return llama_reference, tokenizer_reference


def choose_prompt(tok_ref, pieces, scores, max_seq_len):
    text = ""
    for s in PROMPT_SENTENCES:
        text = (text + " " + s) if text else s
        ids = tok_ref.encode(text.encode(), pieces, scores)
        if len(ids) >= MIN_PROMPT_TOKENS:
            if len(ids) >= max_seq_len:
                common.fail(f"the prompt is {len(ids)} tokens, not below the context {max_seq_len}")
            return text, ids
    common.fail(f"the prompt sentences give only {len(ids)} tokens (< {MIN_PROMPT_TOKENS})")


def decode_llama2c(pieces, ids):
    """The bytes llama2.c prints for ids[1:] fed after ids[0] (README's decoding rule)."""
    out = b""
    for prev, tok in zip(ids, ids[1:]):
        p = pieces[tok]
        if prev == 1 and p.startswith(b" "):
            p = p[1:]
        if len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">"):
            p = bytes([int(p[3:5], 16)])
        # A lone byte that is neither printable nor whitespace (C locale) is not printed.
        if len(p) == 1 and not (0x20 <= p[0] <= 0x7E or p[0] in b"\t\n\v\f\r"):
            continue
        out += p
    return out


def validate_oracle(llama_ref, tok_ref, models):
    ck = llama_ref.Checkpoint(os.path.join(models, "stories260K/stories260K.bin"))
    pieces, _ = tok_ref.load(os.path.join(models, "stories260K/tok512.bin"), ck.vocab_size)
    expected_path = os.path.join(models, "stories260K/expected-greedy-200.txt")
    with open(expected_path, "rb") as f:
        expected = f.read()
    got = decode_llama2c(pieces, llama_ref.greedy(ck, [1], 200)) + b"\n"
    if got != expected:
        common.fail("the NumPy oracle itself does not reproduce " + expected_path +
                    f":\n  oracle:   {got[:120]!r}...\n  expected: {expected[:120]!r}...")
    print(f"oracle: float64 greedy continuation reproduces {expected_path} ({len(expected)} bytes)")


def check_model(np, llama_ref, tok_ref, args, models, isas, name, ckpt_rel, tok_rel):
    ckpt, tok = os.path.join(models, ckpt_rel), os.path.join(models, tok_rel)
    common.require_files(ckpt, tok)
    ck = llama_ref.Checkpoint(ckpt)
    pieces, scores = tok_ref.load(tok, ck.vocab_size)
    text, ids = choose_prompt(tok_ref, pieces, scores, ck.seq_len)
    ref = llama_ref.forward(ck, ids)
    print(f"{name}: prompt of {len(ids)} tokens (context {ck.seq_len}); "
          f"reference logits in [{ref.min():.3f}, {ref.max():.3f}]")

    converted = common.convert_llama2c(args.headwise, ckpt, tok, os.path.join(args.workdir, name))
    steps = ["-n", len(ids), "--temp", 0]
    variants = [
        ("checkpoint --prompt", [ckpt, "--tokenizer", tok, "--prompt", text]),
        ("checkpoint --tokens", [ckpt, "--tokenizer", tok, "--tokens", ",".join(map(str, ids))]),
        ("converted  --prompt", [converted, "--prompt", text]),
    ]
    worst = 0.0
    for isa in isas:
        for threads in common.THREADS:
            by_variant = {}
            for label, model_args in variants:
                out = os.path.join(args.workdir, f"{name}-{isa}-t{threads}.npy")
                if os.path.exists(out):
                    os.remove(out)
                common.run_cli(args.headwise, ["run"] + model_args + steps +
                               ["--threads", threads, "--logits", out], isa=isa)
                got = np.load(out)
                where = f"{name} {label} HEADWISE_ISA={isa} --threads {threads}"
                if got.dtype != np.float32 or got.shape != ref.shape:
                    common.fail(f"{where}: logits are {got.dtype} {got.shape}, expected float32 "
                                f"{ref.shape} (did headwise tokenize the prompt differently?)")
                err = np.abs(got.astype(np.float64) - ref)
                max_err = float(err.max())
                pos, col = divmod(int(err.argmax()), ref.shape[1])
                print(f"  {where}: max abs error {max_err:.3g} (position {pos}, token {col})")
                if not max_err <= TOLERANCE:  # also catches NaN
                    common.fail(f"{where}: max abs error {max_err:.3g} > {TOLERANCE} at position "
                                f"{pos}, token {col}: headwise {got[pos, col]!r}, "
                                f"reference {ref[pos, col]!r}")
                worst = max(worst, max_err)
                by_variant[label] = got
            if not np.array_equal(by_variant["checkpoint --prompt"], by_variant["checkpoint --tokens"]):
                common.fail(f"{name} HEADWISE_ISA={isa} --threads {threads}: --tokens logits differ "
                            "from --prompt logits for the same token ids")
    return worst


def main():
    args = common.parse_args(__doc__)
    common.require_numpy()
    import numpy as np
    models = common.models_dir(args.shared)
    llama_ref, tok_ref = import_references()
    isas = common.supported_isas()
    validate_oracle(llama_ref, tok_ref, models)
    worst = 0.0
    for name, ckpt_rel, tok_rel in MODELS:
        worst = max(worst, check_model(np, llama_ref, tok_ref, args, models, isas, name,
                                       ckpt_rel, tok_rel))
    print(f"PASS: max abs logit error {worst:.3g} <= {TOLERANCE} over {len(MODELS)} models, "
          f"ISAs {', '.join(isas)}, threads {', '.join(map(str, common.THREADS))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
