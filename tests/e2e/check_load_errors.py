#!/usr/bin/env python3
"""headwise run rejects broken models and inputs cleanly, naming the culprit.

Each case starts from a small GPT-2-style model (gpt2_reference.py's layout at d_model
64, 4 heads, 2 layers, vocab 128, context 32), breaks one thing, and runs `headwise run`.
It passes when the exit code is 1 or 2 (an error report, never a crash: no signal, no
abort) and stderr names what is wrong (the file, op, tensor, dtype, setting, token id or
the context, matched as a whole word). The unbroken model must run (exit 0), so every
failure is caused by the one thing each case breaks. Every case prints PASS or FAIL;
the script exits 1 if any fails.
"""
import json
import os
import re
import shutil
import sys

import e2e_common as common

SMALL = dict(vocab_size=128, d_model=64, n_layers=2, n_heads=4, max_seq_len=32, norm_eps=1e-5)
RUN_ARGS = ["--tokens", "1,2,3", "-n", 3, "--temp", 0, "--threads", 1]


def mentions(text, word):
    """`word` occurs in text and is not part of a longer name (h.1.x is not in h.11.x)."""
    return re.search(r"(?<![\w.])" + re.escape(word) + r"(?!\w|\.\w)", text) is not None


class Cases:
    def __init__(self, gpt2, args):
        self.gpt2, self.args = gpt2, args
        self.weights = gpt2.make_weights(SMALL, seed=7)
        self.desc = gpt2.model_json(SMALL, name="gpt2-small-errors")

    def folder(self, name, desc=None, weights=None, header_edit=None, json_text=None):
        """A case folder holding model.json (desc, or raw json_text) and model.safetensors."""
        d = os.path.join(self.args.workdir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "model.json"), "w") as f:
            f.write(json_text if json_text is not None else json.dumps(desc or self.desc, indent=1))
        self.gpt2.write_safetensors(os.path.join(d, "model.safetensors"),
                                    weights if weights is not None else self.weights, header_edit)
        return d

    def desc_with(self, edit):
        d = json.loads(json.dumps(self.desc))
        edit(d)
        return d

    def weights_with(self, edit):
        w = dict(self.weights)
        edit(w)
        return w


def build_cases(c, models):
    """[(name, headwise run arguments, words stderr must name)]."""
    cases = []
    good = c.folder("good")

    text = json.dumps(c.desc, indent=1)
    cases.append(("malformed JSON", [c.folder("malformed_json", json_text=text[:len(text) // 2])],
                  ["model.json"]))

    def unknown_op(d):
        d["block"][7]["op"] = "frobnicate"  # was gelu
    cases.append(("unknown op", [c.folder("unknown_op", desc=c.desc_with(unknown_op))], ["frobnicate"]))

    # Renamed to a name that does not contain the original, so a message about the
    # now-unused 'renamed.tensor' cannot pass for one about the missing tensor.
    def rename(h):
        h["renamed.tensor"] = h.pop("h.1.mlp.c_fc.bias")
    cases.append(("missing tensor", [c.folder("missing_tensor", header_edit=rename)],
                  ["h.1.mlp.c_fc.bias"]))

    def extra(w):
        w["extra.unused"] = c.weights["ln_f.bias"][:4].copy()
    cases.append(("extra tensor", [c.folder("extra_tensor", weights=c.weights_with(extra))],
                  ["extra.unused"]))

    def transposed(w):  # [3C][C] instead of Conv1D's [C][3C]: same bytes, wrong shape
        w["h.0.attn.c_attn.weight"] = c.weights["h.0.attn.c_attn.weight"].T.copy()
    cases.append(("wrong shape", [c.folder("wrong_shape", weights=c.weights_with(transposed))],
                  ["h.0.attn.c_attn.weight"]))

    def int32(w):
        w["ln_f.bias"] = c.weights["ln_f.bias"].view("<i4").copy()
    cases.append(("wrong dtype", [c.folder("wrong_dtype", weights=c.weights_with(int32))],
                  ["ln_f.bias", "I32"]))

    d = c.folder("truncated")
    path = os.path.join(d, "model.safetensors")
    os.truncate(path, os.path.getsize(path) - 100)
    cases.append(("truncated safetensors", [d], ["model.safetensors"]))

    def out_of_range(h):  # the tensor's bytes claimed past the end of the data
        total = max(e["data_offsets"][1] for e in h.values())
        b, e = h["h.1.ln_2.weight"]["data_offsets"]
        h["h.1.ln_2.weight"]["data_offsets"] = [total + 64, total + 64 + (e - b)]
    cases.append(("header offsets out of range", [c.folder("offsets_out_of_range", header_edit=out_of_range)],
                  ["h.1.ln_2.weight"]))

    def heads(d):
        d["settings"]["n_heads"] = 6  # 64 % 6 != 0
    cases.append(("d_model % n_heads != 0", [c.folder("bad_n_heads", desc=c.desc_with(heads))],
                  ["n_heads"]))

    def kv_heads(d):
        d["settings"]["n_kv_heads"] = 3  # 4 % 3 != 0
    cases.append(("n_heads % n_kv_heads != 0", [c.folder("bad_n_kv_heads", desc=c.desc_with(kv_heads))],
                  ["n_kv_heads"]))

    empty = os.path.join(c.args.workdir, "empty")
    shutil.rmtree(empty, ignore_errors=True)
    os.makedirs(empty)
    cases.append(("empty model folder", [empty], ["model.json"]))

    # Ids that no other number in the message could be mistaken for (vocab 128, context 32).
    cases.append(("token id >= vocab", [good, "--tokens", "5,1000,7"], ["1000"]))
    cases.append(("negative token id", [good, "--tokens", "5,-7,9"], ["-7"]))

    ckpt = os.path.join(models, "aidreams260K/aidreams260K.bin") if models else None
    tok = os.path.join(models, "aidreams260K/tok512.bin") if models else None
    if ckpt and os.path.isfile(ckpt) and os.path.isfile(tok):
        long_prompt = "Once upon a time there was a dream about a big house. " * 40
        cases.append(("prompt longer than the context",
                      [ckpt, "--tokenizer", tok, "--prompt", long_prompt, "-n", 256, "--temp", 0],
                      ["context"]))
    else:
        print("note: skipping 'prompt longer than the context': ../shared/models/aidreams260K is absent")
    return good, cases


def run_case(headwise, name, run_args, words):
    args = list(run_args)
    if "--tokens" not in args and "--prompt" not in args:
        args += RUN_ARGS
    elif "--tokens" in args:
        args += ["-n", 3, "--temp", 0, "--threads", 1]
    p = common.run_cli(headwise, ["run"] + args, check=False)
    err = p.stderr.decode(errors="replace").strip()
    problems = []
    if p.returncode not in (1, 2):
        problems.append(f"exit code {p.returncode} (want 1 or 2; negative = killed by a signal)")
    for bad in ("terminate called", "Aborted", "Segmentation fault", "AddressSanitizer"):
        if bad in err:
            problems.append(f"stderr shows a crash ('{bad}')")
    missing = [w for w in words if not mentions(err, w)]
    if missing:
        problems.append("stderr does not name " + ", ".join(repr(w) for w in missing))
    short = err if len(err) <= 300 else err[:300] + "..."
    if problems:
        print(f"FAIL  {name}: {'; '.join(problems)}\n        stderr: {short}")
        return False
    print(f"PASS  {name}: exit {p.returncode}: {short}")
    return True


def main():
    args = common.parse_args(__doc__)
    common.require_numpy()
    common.require_torch()
    import gpt2_reference as gpt2
    models = os.path.join(args.shared, "models")
    models = models if os.path.isdir(models) else None

    good, cases = build_cases(Cases(gpt2, args), models)
    # Control: the unbroken model loads and runs, so the failures below are the cases'.
    p = common.run_cli(args.headwise, ["run", good] + RUN_ARGS, check=False)
    if p.returncode != 0:
        common.fail(f"the unbroken model does not run (exit {p.returncode}): "
                    f"{p.stderr.decode(errors='replace')}")
    print(f"PASS  control: the unbroken model runs")

    failed = [name for name, run_args, words in cases if not run_case(args.headwise, name, run_args, words)]
    if failed:
        print(f"FAIL: {len(failed)} of {len(cases)} cases: {', '.join(failed)}")
        return 1
    print(f"PASS: all {len(cases)} load-error cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
