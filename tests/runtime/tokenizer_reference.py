#!/usr/bin/env python3
"""Independent oracle for Tokenizer::encode: llama2.c's bpe_encode in plain Python.

Usage: tokenizer_reference.py TOKENIZER_BIN VOCAB_SIZE PROMPTS_FILE
PROMPTS_FILE holds one prompt per line, hex-encoded (so any bytes survive; an empty
line is the empty prompt). Prints, per prompt, the ids of encode(prompt, add_bos=True)
separated by spaces.

Written from the algorithm, not from the C++: it rescans every pair after each merge,
the way llama2.c does, where the C++ caches pair results.
"""
import struct
import sys

NO_MERGE = -1e10  # llama2.c's initial best score; exact in float32 too


def load(path, vocab_size):
    with open(path, "rb") as f:
        data = f.read()
    (max_len,) = struct.unpack_from("<i", data, 0)
    off = 4
    pieces, scores = [], []
    for _ in range(vocab_size):
        score, n = struct.unpack_from("<fi", data, off)
        off += 8
        pieces.append(data[off:off + n])
        off += n
        scores.append(score)
    return pieces, scores


def code_points(text):
    """llama2.c's grouping: a byte, then continuation bytes (0b10xxxxxx), <= 4 bytes."""
    groups, cur = [], b""
    for i, b in enumerate(text):
        if b & 0xC0 != 0x80:
            cur = b""
        cur += bytes([b])
        nxt = text[i + 1] if i + 1 < len(text) else 0
        if nxt & 0xC0 == 0x80 and len(cur) < 4:
            continue
        groups.append(cur)
        cur = b""
    return groups


def encode(text, pieces, scores):
    index = {}
    for i, p in enumerate(pieces):
        index.setdefault(p, i)  # lowest id of a duplicated piece
    ids = [1]
    toks = []
    groups = ([b" "] if text else []) + code_points(text)
    for g in groups:
        if g in index:
            toks.append(index[g])
        else:
            toks.extend(b + 3 for b in g)
    while True:
        best, best_i, best_id = NO_MERGE, -1, -1
        for i in range(len(toks) - 1):
            j = index.get(pieces[toks[i]] + pieces[toks[i + 1]])
            if j is not None and scores[j] > best:
                best, best_i, best_id = scores[j], i, j
        if best_i < 0:
            break
        toks[best_i:best_i + 2] = [best_id]
    return ids + toks


def main():
    path, vocab_size, prompts_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    pieces, scores = load(path, vocab_size)
    with open(prompts_file, "r") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        print(" ".join(str(i) for i in encode(bytes.fromhex(line), pieces, scores)))


if __name__ == "__main__":
    main()
