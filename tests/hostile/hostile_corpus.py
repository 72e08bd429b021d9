#!/usr/bin/env python3
"""The hostile-input regression corpus (issue 12).

Generates malformed, hostile and extreme inputs (model descriptions, safetensors
files, llama2.c checkpoints and tokenizers, command-line arguments), runs the
headwise CLI on each and checks what the project promises for bad input:

  - a non-zero exit and no signal (no abort, no SIGSEGV, no kill);
  - a message on stderr that names the culprit (the field, file or option);
  - no sanitizer report (when the binary is an ASan/UBSan build);
  - under 10 s and under 512 MiB of peak RSS.

Valid controls (the same files unmodified) must still run and exit 0.

Every outcome is counted: refused cleanly / unclear message / crash / hang /
silent acceptance / over the resource bounds. Exit status 0 only when every hostile
input was refused cleanly and every control passed.

  hostile_corpus.py --headwise BUILD/headwise --shared ../shared [--only REGEX] [-v]

The base model is converted from shared/models/stories260K at run time into a
temporary folder (nothing from shared/ is copied into the repository).
"""
import argparse
import json
import math
import os
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

TIME_LIMIT_S = 10.0
RSS_LIMIT_MIB = 512
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                   "WARNING: ThreadSanitizer", "ERROR: UndefinedBehaviorSanitizer")


class Case:
    def __init__(self, name, argv, culprit, valid=False, stdin=None):
        self.name = name
        self.argv = argv
        self.culprit = culprit  # regex the message must match (hostile cases)
        self.valid = valid      # a control: must exit 0
        self.stdin = stdin


# ---- file builders ----------------------------------------------------------------------

def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def safetensors_bytes(header_obj_or_text, data=b"", header_len=None):
    text = header_obj_or_text if isinstance(header_obj_or_text, (bytes, str)) else json.dumps(header_obj_or_text)
    if isinstance(text, str):
        text = text.encode()
    n = len(text) if header_len is None else header_len
    return struct.pack("<Q", n) + text + data


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


class Fixture:
    """A temporary folder holding a converted stories260K and helpers to mutate it."""

    def __init__(self, headwise, shared, tmp):
        self.headwise = headwise
        self.tmp = tmp
        self.ckpt = os.path.join(shared, "models/stories260K/stories260K.bin")
        self.tok = os.path.join(shared, "models/stories260K/tok512.bin")
        self.base = os.path.join(tmp, "base")
        r = subprocess.run([headwise, "convert", "llama2c", self.ckpt, "--tokenizer", self.tok,
                            "-o", self.base], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("hostile_corpus: converting the base model failed:\n" + r.stderr)
        with open(os.path.join(self.base, "model.json")) as f:
            self.desc = json.load(f)
        self.weights = os.path.join(self.base, "model.safetensors")
        self.tokenizer = os.path.join(self.base, "tokenizer.bin")
        self.n = 0

    def path(self, name):
        self.n += 1
        d = os.path.join(self.tmp, "%03d-%s" % (self.n, name))
        os.makedirs(d, exist_ok=True)
        return d

    def model(self, name, mutate=None, text=None):
        """A model.json next to links to the base weights/tokenizer; returns its path."""
        d = self.path(name)
        os.symlink(self.weights, os.path.join(d, "model.safetensors"))
        os.symlink(self.tokenizer, os.path.join(d, "tokenizer.bin"))
        p = os.path.join(d, "model.json")
        if text is None:
            desc = json.loads(json.dumps(self.desc))
            if mutate:
                mutate(desc)
            text = json.dumps(desc, indent=1)
        write(p, text.encode() if isinstance(text, str) else text)
        return p

    def settings(self, name, **kv):
        def m(d):
            d["settings"].update(kv)
        return self.model(name, m)

    def weights_file(self, name, data):
        """A model.json (base description) whose weights are `data`."""
        d = self.path(name)
        write(os.path.join(d, "model.safetensors"), data)
        os.symlink(self.tokenizer, os.path.join(d, "tokenizer.bin"))
        p = os.path.join(d, "model.json")
        write(p, json.dumps(self.desc).encode())
        return p

    def tokenizer_file(self, name, data):
        d = self.path(name)
        return write(os.path.join(d, "tokenizer.bin"), data)

    def ckpt_file(self, name, data):
        d = self.path(name)
        return write(os.path.join(d, "model.bin"), data)


def llama2c_header(dim=64, hidden=172, layers=5, heads=8, kv_heads=4, vocab=512, seq=512):
    return struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab, seq)


def tokenizer_bytes(pieces, max_len=None):
    out = struct.pack("<i", max(len(p) for p in pieces) if max_len is None else max_len)
    for p in pieces:
        out += struct.pack("<fi", 0.0, len(p)) + p
    return out


# ---- the corpus ---------------------------------------------------------------------------

def build_cases(fx, hw):
    T = fx.tmp
    cases = []
    run = lambda model, *extra: [hw, "run", model, "--prompt", "Once upon", "-n", "4", "--temp", "0", "--seed", "1", *extra]

    def add(name, argv, culprit, **kw):
        cases.append(Case(name, argv, culprit, **kw))

    # Controls: the valid inputs the hostile ones are made from.
    add("control_llama2c", run(fx.ckpt, "--tokenizer", fx.tok), None, valid=True)
    add("control_model_json", run(os.path.join(fx.base, "model.json")), None, valid=True)
    add("control_folder", run(fx.base), None, valid=True)
    add("control_tokens", [hw, "run", fx.base, "--tokens", "1,2,3", "-n", "4", "--temp", "0", "--seed", "1"], None, valid=True)
    add("control_heads", [hw, "heads", fx.base, "--threads", "2"], None, valid=True)
    add("control_maps_png", [hw, "maps", fx.base, "--prompt", "Once upon a time", "-o",
                             os.path.join(T, "control.html"), "--png", os.path.join(T, "control-png")], None, valid=True)

    # ---- model.json: sizes and overflow
    add("json_heads_times_head_dim_wraps_int", run(fx.settings("heads-wrap", n_heads=536870920, head_dim=8)), r"n_heads")
    add("json_kv_heads_times_head_dim_wraps", run(fx.settings("kvheads-wrap", n_heads=536870920, n_kv_heads=536870920, head_dim=8)), r"n_(kv_)?heads")
    add("json_max_seq_len_2p30", run(fx.settings("seq-2p30", max_seq_len=1 << 30)), r"max_seq_len|KV cache")
    add("json_vocab_2p30", run(fx.settings("vocab-2p30", vocab_size=1 << 30)), r"vocab")
    add("json_n_layers_2p30", run(fx.settings("layers-2p30", n_layers=1 << 30)), r"n_layers|layers\.")

    def shared_layers(d):  # every layer uses layer 0's tensors: no missing tensor stops the build early
        d["settings"]["n_layers"] = 1 << 30
        for n in d["block"]:
            for k in ("weight", "bias"):
                if k in n:
                    n[k] = n[k].replace("{layer}", "0")
    add("json_n_layers_2p30_shared_weights", run(fx.model("layers-shared", shared_layers)), r"n_layers")
    add("json_n_layers_2p31", run(fx.settings("layers-2p31", n_layers=1 << 31)), r"n_layers")
    add("json_vocab_negative", run(fx.settings("vocab-neg", vocab_size=-5)), r"vocab_size")
    add("json_n_heads_zero", run(fx.settings("heads-zero", n_heads=0)), r"n_heads")
    add("json_vocab_2p64", run(fx.model("vocab-2p64", text=json.dumps(fx.desc).replace('"vocab_size": 512', '"vocab_size": 18446744073709551616'))), r"vocab_size")
    add("json_vocab_float", run(fx.settings("vocab-float", vocab_size=512.5)), r"vocab_size")
    add("json_head_dim_512", run(fx.settings("head-dim-512", head_dim=512)), r"head_dim.*(limit|build)|build.*head_dim")
    add("json_d_model_contradicts_weights", run(fx.settings("dmodel-128", d_model=128)), r"d_model")

    # ---- model.json: floats
    add("json_norm_eps_overflows_float", run(fx.settings("eps-inf", norm_eps=1e300)), r"norm_eps")
    add("json_rope_theta_overflows_float", run(fx.settings("theta-inf", rope_theta=1e39)), r"rope_theta")
    add("json_rope_theta_negative", run(fx.settings("theta-neg", rope_theta=-1.0)), r"rope_theta")
    add("json_norm_eps_underflows_to_zero", run(fx.settings("eps-tiny", norm_eps=1e-50)), r"norm_eps")

    def node_field(section, idx, **kv):
        def m(d):
            d[section][idx].update(kv)
        return m
    attn_idx = [i for i, n in enumerate(fx.desc["block"]) if n["op"] == "attention"][0]
    add("json_attention_scale_inf", run(fx.model("scale-inf", node_field("block", attn_idx, scale=1e40))), r"scale")
    add("json_rmsnorm_eps_inf", run(fx.model("node-eps-inf", node_field("block", 0, eps=1e300))), r"eps")

    def split_wrap(d):  # widths that add up to the weight's 64 outputs only modulo 2^32
        n = [n for n in d["block"] if n["op"] == "linear" and n["out"] == "q"][0]
        n["out"] = ["q", "q_extra"]
        n["split"] = [(1 << 32) + 32, 32]
    add("json_split_sum_wraps_2p32", run(fx.model("split-wrap", split_wrap)), r"split")

    # ---- model.json: structure and strictness
    add("json_duplicate_settings_key", run(fx.model("dup-key", text=json.dumps(fx.desc).replace('"n_heads": 8', '"n_heads": 8, "n_heads": 16'))), r"[Dd]uplicate.*n_heads")
    add("json_duplicate_top_key", run(fx.model("dup-top", text=json.dumps(fx.desc)[:-1] + ', "name": "again"}')), r"[Dd]uplicate.*name")
    deep = "[" * 100000 + "]" * 100000
    add("json_nested_100k_in_comment", run(fx.model("deep-comment", text=json.dumps(fx.desc)[:-1] + ', "comment": ' + deep + "}")), r"nest|deep|depth")
    add("json_nested_100k_objects", run(fx.model("deep-objects", text='{"a":' * 100000 + "1" + "}" * 100000)), r"nest|deep|depth")
    add("json_nested_100k_unclosed", run(fx.model("deep-unclosed", text="[" * 100000)), r"nest|deep|depth|JSON")
    add("json_empty_file", run(fx.model("empty", text="")), r"model\.json.*JSON|JSON.*model\.json")
    add("json_not_object", run(fx.model("array", text="[1,2,3]")), r"object")
    add("json_binary_garbage", run(fx.model("garbage", text=bytes(range(256)) * 4)), r"JSON")
    add("json_invalid_utf8_key", run(fx.model("bad-utf8", text=b'{"\xff\xfe": 1}')), r"JSON|UTF|utf")
    add("json_empty_weights_path", run(fx.model("empty-weights", node_field_top("weights", ""))), r"weights")
    add("json_weights_missing_file", run(fx.model("missing-weights", node_field_top("weights", "nope.safetensors"))), r"nope\.safetensors")
    add("json_weights_is_directory", run(fx.model("weights-dir", node_field_top("weights", "/tmp"))), r"/tmp.*director")
    add("json_tokenizer_is_directory", run(fx.model("tok-dir", node_field_top("tokenizer", "/tmp"))), r"/tmp.*director")
    add("json_weights_dev_zero", run(fx.model("weights-zero", node_field_top("weights", "/dev/zero"))), r"/dev/zero")
    add("json_tokenizer_dev_zero", run(fx.model("tok-zero", node_field_top("tokenizer", "/dev/zero"))), r"/dev/zero")
    add("json_tokenizer_dev_urandom", run(fx.model("tok-urandom", node_field_top("tokenizer", "/dev/urandom"))), r"/dev/urandom")

    d = fx.path("model-json-dir")
    os.makedirs(os.path.join(d, "model.json"))
    add("json_model_json_is_directory", run(os.path.join(d, "model.json")), r"model\.json")
    add("json_model_json_in_folder_is_directory", run(d), r"model\.json.*director")
    z = os.path.join(fx.path("dev-zero-json"), "zero.json")
    os.symlink("/dev/zero", z)
    add("json_model_json_is_dev_zero", run(z), r"zero\.json")

    # FIFOs: opening one for reading blocks until a writer comes; headwise must refuse it.
    for what in ("model", "weights", "tokenizer"):
        fd = fx.path("fifo-" + what)
        fifo = os.path.join(fd, "fifo" + (".json" if what == "model" else ""))
        os.mkfifo(fifo)
        if what == "model":
            argv = run(fifo)
        elif what == "weights":
            argv = run(fx.model("fifo-weights-json", node_field_top("weights", fifo)))
        else:
            argv = run(fx.base, "--tokenizer", fifo)
        add("fifo_as_" + what, argv, re.escape(fifo))
    add("fifo_as_llama2c_checkpoint", run(fifo_ckpt(fx), "--tokenizer", fx.tok), r"fifo")

    # ---- safetensors
    hdr, data = read_safetensors(fx.weights)
    names = [k for k in hdr if k != "__metadata__"]
    first = names[0]
    add("st_header_len_huge", run(fx.weights_file("st-hlen", struct.pack("<Q", (1 << 64) - 1) + b"{}")), r"header length")
    add("st_header_len_past_end", run(fx.weights_file("st-hlen2", safetensors_bytes(b"{}", header_len=1000))), r"header length")
    add("st_short_file", run(fx.weights_file("st-short", b"\x01\x02")), r"bytes")
    add("st_header_not_json", run(fx.weights_file("st-notjson", safetensors_bytes(b"{nope"))), r"JSON")
    add("st_header_array", run(fx.weights_file("st-array", safetensors_bytes(b"[]"))), r"object")
    add("st_nested_100k", run(fx.weights_file("st-deep", safetensors_bytes(('{"x":{"dtype":"F32","shape":' + "[" * 100000 + "]" * 100000 + ',"data_offsets":[0,0]}}').encode()))), r"nest|deep|depth")
    add("st_nested_100k_metadata", run(fx.weights_file("st-deep-meta", safetensors_bytes(('{"__metadata__":' + '{"a":' * 100000 + '"x"' + "}" * 100000 + "}").encode()))), r"nest|deep|depth")

    def mutated_header(name, change, raw=None):
        h = json.loads(json.dumps(hdr))
        change(h)
        text = json.dumps(h) if raw is None else raw(json.dumps(h))
        return run(fx.weights_file(name, safetensors_bytes(text, data)))

    add("st_duplicate_tensor_name", mutated_header("st-dup", lambda h: None,
        raw=lambda t: t[:-1] + ', "%s": %s}' % (first, json.dumps(hdr[first]))), r"[Dd]uplicate.*" + re.escape(first))
    add("st_offsets_beyond_data", mutated_header("st-off", lambda h: h[first].update(data_offsets=[0, 1 << 40])), re.escape(first))
    add("st_offsets_wrap_2p64", mutated_header("st-wrap", lambda h: h[first].update(data_offsets=[(1 << 64) - 4, 4])), re.escape(first))
    add("st_offsets_wrap_2p32", mutated_header("st-wrap32", lambda h: h[first].update(data_offsets=[(1 << 32), (1 << 32) + hdr[first]["data_offsets"][1] - hdr[first]["data_offsets"][0]])), re.escape(first))
    add("st_shape_overflow", mutated_header("st-shape", lambda h: h[first].update(shape=[1 << 62, 1 << 62])), re.escape(first))
    add("st_shape_negative", mutated_header("st-shape-neg", lambda h: h[first].update(shape=[-1, 64])), re.escape(first))
    add("st_dtype_unknown", mutated_header("st-dtype", lambda h: h[first].update(dtype="F99")), r"F99")
    add("st_entry_not_object", mutated_header("st-entry", lambda h: h.update({first: 3})), re.escape(first))
    add("st_missing_tensor", mutated_header("st-missing", lambda h: h.pop(first)), re.escape(first))
    add("st_extra_tensor", mutated_header("st-extra", lambda h: h.update(extra={"dtype": "F32", "shape": [0], "data_offsets": [0, 0]})), r"extra")
    add("st_shape_huge_array", mutated_header("st-shape-long", lambda h: h[first].update(shape=[1] * 200000)), re.escape(first))
    add("st_truncated_data", run(fx.weights_file("st-trunc", safetensors_bytes(json.dumps(hdr), data[:len(data) // 2]))), r"beyond|data")
    add("st_header_len_100mb_spaces", run(fx.weights_file("st-spaces", safetensors_bytes(b" " * (100 << 20) + json.dumps(hdr).encode(), data))), r"header")

    # NaN / inf weights: headwise maps used to index its colour table with -2^31.
    nan = struct.pack("<f", float("nan")) * (len(data) // 4)
    add("st_nan_weights_maps_png", [hw, "maps", fx.weights_file("st-nan", safetensors_bytes(json.dumps(hdr), nan)),
                                    "--prompt", "Once upon", "-o", os.path.join(T, "nan.html"), "--png", os.path.join(T, "nan-png")],
        r"NaN|non-finite|not finite")
    inf = struct.pack("<f", float("inf")) * (len(data) // 4)
    add("st_inf_weights_maps_png", [hw, "maps", fx.weights_file("st-inf", safetensors_bytes(json.dumps(hdr), inf)),
                                    "--prompt", "Once upon", "-o", os.path.join(T, "inf.html"), "--png", os.path.join(T, "inf-png")],
        r"NaN|non-finite|not finite|inf")

    # ---- llama2.c checkpoints
    with open(fx.ckpt, "rb") as f:
        ck = f.read()
    add("ck_truncated", run(fx.ckpt_file("ck-trunc", ck[:len(ck) // 2]), "--tokenizer", fx.tok), r"truncated")
    add("ck_trailing", run(fx.ckpt_file("ck-trail", ck + b"\0" * 64), "--tokenizer", fx.tok), r"trailing")
    add("ck_header_only", run(fx.ckpt_file("ck-hdr", ck[:28]), "--tokenizer", fx.tok), r"bytes")
    add("ck_short", run(fx.ckpt_file("ck-short", ck[:5]), "--tokenizer", fx.tok), r"header")
    add("ck_negative_dim", run(fx.ckpt_file("ck-neg", llama2c_header(dim=-64) + ck[28:]), "--tokenizer", fx.tok), r"dim")
    add("ck_layers_int_max", run(fx.ckpt_file("ck-layers", llama2c_header(layers=2**31 - 1) + ck[28:]), "--tokenizer", fx.tok), r"n_layers|bytes")
    add("ck_all_int_max", run(fx.ckpt_file("ck-max", struct.pack("<7i", *([2**31 - 1] * 7)) + ck[28:]), "--tokenizer", fx.tok), r"header|bytes|dim")
    add("ck_vocab_int_min", run(fx.ckpt_file("ck-vmin", llama2c_header(vocab=-2**31) + ck[28:]), "--tokenizer", fx.tok), r"vocab_size")
    add("ck_dim_not_multiple", run(fx.ckpt_file("ck-mult", llama2c_header(heads=7) + ck[28:]), "--tokenizer", fx.tok), r"n_heads")
    # A consistent checkpoint with a context of 2^20 positions: its KV cache (1.3 GB,
    # touched only as far as used) fits in memory, so it must run.
    add("control_ck_seq_len_2p20", run(fx.ckpt_file("ck-seq", ck_with_seq(ck, 1 << 20)), "--tokenizer", fx.tok), None, valid=True)
    add("ck_head_dim_512", run(fx.ckpt_file("ck-hd512", llama2c_header(dim=512, heads=1, kv_heads=1) + ck[28:]), "--tokenizer", fx.tok), r"bytes|head_dim")

    # ---- tokenizer.bin
    with open(fx.tok, "rb") as f:
        tk = f.read()
    add("tok_trailing_bytes", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-trail", tk + b"junk")), r"trailing|bytes after")
    add("tok_more_pieces_than_vocab", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-more", tk + struct.pack("<fi", 0.0, 1) + b"x")), r"trailing|more|bytes after")
    add("tok_truncated", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-trunc", tk[: len(tk) // 2])), r"truncated")
    add("tok_empty", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-empty", b"")), r"truncated|empty|max_token_length")
    add("tok_negative_max_len", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-maxlen", struct.pack("<i", -1) + tk[4:])), r"max_token_length")
    add("tok_piece_len_huge", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-plen", tk[:4] + struct.pack("<fi", 0.0, 2**31 - 1))), r"length|truncated")
    add("tok_piece_len_1mib_truncated", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-plen2", tk[:4] + struct.pack("<fi", 0.0, 1 << 20))), r"truncated")
    add("tok_small_for_vocab_2p30", run(fx.settings("tok-vocab", vocab_size=1 << 30)), r"vocab")
    add("tok_nan_scores", run(fx.base, "--tokenizer", fx.tokenizer_file("tok-nan", tok_nan_scores(tk))), r"score|NaN|nan")

    # ---- command line
    b = fx.base
    add("cli_tokens_trailing_comma", [hw, "run", b, "--tokens", "1,2,", "-n", "4"], r"--tokens")
    add("cli_tokens_leading_comma", [hw, "run", b, "--tokens", ",1,2", "-n", "4"], r"--tokens")
    add("cli_tokens_double_comma", [hw, "run", b, "--tokens", "1,,2", "-n", "4"], r"--tokens")
    add("cli_tokens_space", [hw, "run", b, "--tokens", "1, 2", "-n", "4"], r"--tokens")
    add("cli_tokens_out_of_vocab", [hw, "run", b, "--tokens", "1,512", "-n", "4"], r"512")
    add("cli_tokens_int64", [hw, "run", b, "--tokens", "1,99999999999999999999", "-n", "4"], r"--tokens")
    add("cli_tokens_empty", [hw, "run", b, "--tokens", "", "-n", "4"], r"--tokens")
    add("cli_temp_nan", [hw, "run", b, "--temp", "nan", "-n", "4"], r"--temp")
    add("cli_temp_inf", [hw, "run", b, "--temp", "inf", "-n", "4"], r"--temp")
    add("cli_temp_negative", [hw, "run", b, "--temp", "-1", "-n", "4"], r"--temp")
    add("cli_top_p_nan", [hw, "run", b, "--top-p", "nan", "-n", "4"], r"--top-p")
    add("cli_threads_100000", [hw, "run", b, "--threads", "100000", "-n", "4", "--temp", "0"], r"--threads")
    add("cli_threads_2p32", [hw, "run", b, "--threads", "4294967296", "-n", "4", "--temp", "0"], r"--threads")
    add("cli_threads_negative", [hw, "run", b, "--threads", "-2", "-n", "4"], r"--threads")
    add("cli_heads_threads_100000", [hw, "heads", b, "--threads", "100000"], r"--threads")
    add("cli_maps_threads_2p32", [hw, "maps", b, "--threads", "4294967296", "-o", os.path.join(T, "t.html")], r"--threads")
    add("cli_steps_huge", [hw, "run", b, "-n", "99999999999999999999"], r"-n|--steps|steps")
    add("cli_seed_negative", [hw, "run", b, "--seed", "-1"], r"--seed")
    add("cli_unknown_option", [hw, "run", b, "--bogus"], r"--bogus")
    add("cli_missing_value", [hw, "run", b, "--prompt"], r"--prompt")
    add("cli_unknown_command", [hw, "frobnicate"], r"frobnicate")
    add("cli_model_empty_path", [hw, "run", "", "-n", "4"], r"model|MODEL|empty")
    add("cli_bench_attention_heads_huge", [hw, "bench", "attention", "--heads", "1000000000", "--seq", "1000000", "--repeat", "1", "--warmup", "0"], r"--heads|memory|allocate")
    add("cli_bench_attention_threads_2p32", [hw, "bench", "attention", "--threads", "4294967296"], r"--threads")
    add("cli_convert_fifo_tokenizer", [hw, "convert", "llama2c", fx.ckpt, "--tokenizer", fifo_tok(fx), "-o", os.path.join(T, "conv-out")], r"fifo")
    add("cli_heads_text_dev_zero", [hw, "heads", b, "--text", "/dev/zero"], r"/dev/zero")
    add("cli_maps_text_fifo", [hw, "maps", b, "--text", fifo_tok(fx), "-o", os.path.join(T, "f.html")], r"fifo")

    # ---- readers added later (GGUF, tokenizer.json): only when this headwise has them
    if has_command(hw, "tokenize"):
        tj = os.path.join(fx.path("tokenizer-json"), "tokenizer.json")
        write(tj, json.dumps({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}).encode())
        add("control_tokenize_tokenizer_json", [hw, "tokenize", tj, "--text", "ab"], None, valid=True)
        add("control_tokenize_llama2c", [hw, "tokenize", fx.base, "--text", "Once upon"], None, valid=True)
        # 1 MiB of prose: the llama2.c tokenizer was quadratic (302 s); now it must finish
        # inside the 10 s bound like every other case.
        big = os.path.join(fx.path("text-1mib"), "text.txt")
        words = "once upon a time there was a little girl named lily she loved to play outside".split()
        write(big, " ".join(words[(i * 7) % len(words)] for i in range(200000)).encode()[: 1 << 20])
        add("control_tokenize_1mib_text", [hw, "tokenize", fx.base, "--file", big], None, valid=True)
        deep_tj = os.path.join(fx.path("tokenizer-json-deep"), "tokenizer.json")
        write(deep_tj, ('{"model": {"type": "BPE", "vocab": {}, "merges": []}, "normalizer": ' + "[" * 100000 + "]" * 100000 + "}").encode())
        add("tokjson_nested_100k", [hw, "tokenize", deep_tj, "--text", "ab"], r"nest|deep|depth")
        dup_tj = os.path.join(fx.path("tokenizer-json-dup"), "tokenizer.json")
        write(dup_tj, b'{"model": {"type": "BPE", "vocab": {"a": 0, "a": 1}, "merges": []}}')
        add("tokjson_duplicate_vocab_key", [hw, "tokenize", dup_tj, "--text", "ab"], r"[Dd]uplicate.*a")
        fifo_tj = os.path.join(fx.path("tokenizer-json-fifo"), "tokenizer.json")
        os.mkfifo(fifo_tj)
        add("tokjson_fifo", [hw, "tokenize", fifo_tj, "--text", "ab"], re.escape(fifo_tj))
        add("tokenize_file_dev_zero", [hw, "tokenize", fx.base, "--file", "/dev/zero"], r"/dev/zero")
        add("tokenize_file_fifo", [hw, "tokenize", fx.base, "--file", fifo_tok(fx)], r"fifo")
        fifo_gguf = os.path.join(fx.path("gguf-fifo"), "model.gguf")
        os.mkfifo(fifo_gguf)
        add("gguf_fifo", run(fifo_gguf), re.escape(fifo_gguf))
        add("gguf_fifo_tokenize", [hw, "tokenize", fifo_gguf, "--text", "ab"], re.escape(fifo_gguf))
        g = os.path.join(fx.path("gguf-garbage"), "model.gguf")
        write(g, b"GGUF" + struct.pack("<IQQ", 3, (1 << 62), (1 << 62)))
        add("gguf_counts_2p62", run(g), r"model\.gguf")
        g2 = os.path.join(fx.path("gguf-trunc"), "model.gguf")
        write(g2, b"GGUF" + struct.pack("<I", 3))
        add("gguf_truncated_header", run(g2), r"model\.gguf")
        cfg = fx.path("hf-deep")
        write(os.path.join(cfg, "config.json"), ("{\"architectures\": [\"LlamaForCausalLM\"], \"x\": " + "[" * 100000 + "]" * 100000 + "}").encode())
        write(os.path.join(cfg, "model.safetensors"), safetensors_bytes(b"{}"))
        add("hf_config_nested_100k", run(cfg), r"nest|deep|depth|config\.json")
        cfg2 = fx.path("hf-fifo")
        os.mkfifo(os.path.join(cfg2, "config.json"))
        write(os.path.join(cfg2, "model.safetensors"), safetensors_bytes(b"{}"))
        add("hf_config_fifo", run(cfg2), r"config\.json|model\.json")
    return cases


def has_command(hw, name):
    r = subprocess.run([hw, name, "--help"], capture_output=True)
    return r.returncode == 0


def node_field_top(key, value):
    def m(d):
        d[key] = value
    return m


def fifo_ckpt(fx):
    d = fx.path("fifo-ckpt")
    p = os.path.join(d, "fifo.bin")
    os.mkfifo(p)
    return p


def fifo_tok(fx):
    d = fx.path("fifo-tok")
    p = os.path.join(d, "fifo.bin")
    os.mkfifo(p)
    return p


def ck_with_seq(ck, seq):
    """The checkpoint with a larger seq_len and its RoPE tables grown to match, so the
    file size agrees with the header: only the context is hostile."""
    dim, hidden, layers, heads, kv, vocab, old = struct.unpack("<7i", ck[:28])
    head = dim // heads
    old_rope = 2 * (old * head // 2) * 4
    shared = vocab > 0
    tail = 0 if shared else abs(vocab) * dim * 4
    body = ck[28:len(ck) - tail - old_rope]
    return struct.pack("<7i", dim, hidden, layers, heads, kv, vocab, seq) + body + b"\0" * (2 * (seq * head // 2) * 4) + ck[len(ck) - tail:]


def tok_nan_scores(tk):
    out = bytearray(tk)
    off = 4
    while off + 8 <= len(out):
        out[off:off + 4] = struct.pack("<f", float("nan"))
        (n,) = struct.unpack("<i", out[off + 4:off + 8])
        off += 8 + n
    return bytes(out)


# ---- running ------------------------------------------------------------------------------

def run_case(c, env):
    t0 = time.monotonic()
    p = subprocess.Popen(c.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         env=env, start_new_session=True)
    err = b""
    hang = False
    try:
        _, err = p.communicate(timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        hang = True
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    elapsed = time.monotonic() - t0
    # (the peak RSS comes from the MEASURE wrapper each case runs under, see main())
    return p.returncode, err.decode("utf-8", "replace"), elapsed, hang


def classify(c, rc, err, elapsed, hang, rss_mib):
    if hang:
        return "hang"
    if any(m in err for m in SANITIZER_MARKS):
        return "crash"  # a sanitizer report is a memory/UB error even when the exit is clean
    if rc < 0 or rc in (134, 136, 139):
        return "crash"
    if rss_mib > RSS_LIMIT_MIB or elapsed > TIME_LIMIT_S:
        return "over_bounds"
    if c.valid:
        return "control_ok" if rc == 0 else "control_refused"
    if rc == 0:
        return "silent_acceptance"
    if c.culprit and not re.search(c.culprit, err):
        return "unclear_message"
    return "refused_cleanly"


def common_arguments(doc):
    """The command line both corpora take (also tests/hostile/server_hostile.py)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headwise", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", help="write per-case results here")
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap.parse_args()


def sanitizer_env():
    """The environment the cases run in. Sanitizer builds: stop at the first report, and
    let a huge request fail as bad_alloc instead of ASan's own abort, so the project's
    handling is what is tested."""
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "abort_on_error=0:allocator_may_return_null=1:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    env["OMP_NUM_THREADS"] = env.get("OMP_NUM_THREADS", "2")
    return env


def main():
    a = common_arguments(__doc__)
    hw = os.path.abspath(a.headwise)
    if not os.path.exists(os.path.join(a.shared, "models/stories260K/stories260K.bin")):
        print("hostile_corpus: %s/models/stories260K is missing (the shared models)" % a.shared, file=sys.stderr)
        return 1
    env = sanitizer_env()
    tmp = tempfile.mkdtemp(prefix="headwise-hostile-")
    counts = {}
    results = []
    try:
        fx = Fixture(hw, a.shared, tmp)
        cases = [c for c in build_cases(fx, hw) if re.search(a.only, c.name)]
        for c in cases:
            argv = [sys.executable, "-c", MEASURE, *c.argv]
            real = Case(c.name, argv, c.culprit, c.valid)
            rc, err, elapsed, hang = run_case(real, env)
            rss = 0.0
            m = re.search(r"\nHOSTILE_RSS_KIB (\d+) RC (-?\d+)\s*$", err)
            if m:
                rss = int(m.group(1)) / 1024.0
                rc = int(m.group(2))
                err = err[: m.start()]
            verdict = classify(c, rc, err, elapsed, hang, rss)
            counts[verdict] = counts.get(verdict, 0) + 1
            results.append({"case": c.name, "verdict": verdict, "exit": rc, "seconds": round(elapsed, 2),
                            "rss_mib": round(rss, 1), "message": err.strip()[-400:]})
            bad = verdict not in ("refused_cleanly", "control_ok")
            if bad or a.verbose:
                print("%-45s %-18s exit %-4d %5.2f s %6.1f MiB  %s" % (
                    c.name, verdict, rc, elapsed, rss, err.strip().splitlines()[-1][:160] if err.strip() else ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    hostile = sum(v for k, v in counts.items() if not k.startswith("control"))
    controls = counts.get("control_ok", 0) + counts.get("control_refused", 0)
    print("hostile_corpus: %d hostile inputs: %d refused cleanly, %d unclear message, %d crashes, %d hangs, "
          "%d silent acceptances, %d over the time/memory bounds; %d/%d valid controls ran" % (
              hostile, counts.get("refused_cleanly", 0), counts.get("unclear_message", 0), counts.get("crash", 0),
              counts.get("hang", 0), counts.get("silent_acceptance", 0), counts.get("over_bounds", 0),
              counts.get("control_ok", 0), controls))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": counts, "results": results}, f, indent=1)
    ok = counts.get("refused_cleanly", 0) == hostile and counts.get("control_ok", 0) == controls
    return 0 if ok else 1


# Runs the command, then prints its own peak RSS and exit status on stderr: getrusage
# of the one child this wrapper started is that child's peak alone.
MEASURE = r"""
import os, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stderr.write("\nHOSTILE_RSS_KIB %d RC %d\n" % (rss, p.returncode))
"""

if __name__ == "__main__":
    sys.exit(main())
