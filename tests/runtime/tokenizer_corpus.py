#!/usr/bin/env python3
"""Writes the tokenizer test corpus: >= 300 byte strings, deterministic (no clock, a
fixed-seed generator), as JSON [{"kind": ..., "hex": ...}] so that invalid UTF-8 travels
exactly. Kinds: whitespace runs, digits, punctuation, accents, CJK, emoji, code,
special-token look-alikes, invalid UTF-8, and seeded random mixtures of all of them.

usage: tokenizer_corpus.py OUT.json
"""
import json
import random
import sys

WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "a  b", "a   b", "a\t\tb", "   leading",
              "trailing   ", "a \n b", "\n\n\nx", "x\n\n\n", " \t \n", "word  \n  word", "\u00a0nbsp\u00a0",
              "\u3000ideographic space", "a\u2009thin", "  two  spaces  ", "\v\f", "tab\tseparated\tvalues",
              "line1\nline2\r\nline3", "       ", "a b c d e f", " a", "a ", "\n"]
DIGITS = ["0", "12", "123", "1234", "12345", "123456789012345678901234567890", "3.14159", "1,000,000",
          "v1.2.3", "2024-01-01", "10:45:00", "0x1F", "1e-10", "-42", "+7", "١٢٣", "①②③", "½ cup", "Ⅻ",
          "a1b2c3", "99 bottles", "100%", "$5.00", "#1", "000", "007", "12 34 56", "1st 2nd 3rd"]
PUNCT = ["!!!", "...", "?!", "(a)", "[x]", "{}", "'s", "'S", "it's", "don't", "I'LL", "we've", "you'd",
         "\"quoted\"", "--", "—", "–", "«guillemets»", "#@$%^&*", "a.b.c", "e.g.", "\u2018single\u2019",
         "\u201cdouble\u201d", "¿Qué?", "¡Hola!", "a/b\\c", "~`|", "<>", ";:,", "...?!..."]
ACCENTS = ["café", "naïve", "résumé", "cafe\u0301", "Ångström", "Zürich", "niño", "søster", "Straße", "İstanbul",
           "ﬁnance", "Ǆ", "Crème brûlée", "façade", "coöperate", "Œuvre", "Ελληνικά", "Русский текст",
           "עברית", "العربية", "हिन्दी", "ไทย", "Tiếng Việt", "ǅemal", "ÀÉÎÕÜ", "x\u0308\u0301"]
CJK = ["你好世界", "日本語のテキスト", "한국어 문장", "中文，标点。", "カタカナ", "ひらがな", "漢字と仮名",
       "你好 world", "東京2024", "「引用」", "𠀀𠀁", "我爱北京天安门"]
EMOJI = ["🙂", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "❤️", "🎉🎉🎉", "a🙂b", " 🙂 ", "🤖 robot", "☕", "🧑🏿\u200d💻",
         "✅ done", "😀😃😄😁"]
CODE = ["def f(x):\n    return x**2\n", "int main() { return 0; }", "for (int i = 0; i < n; ++i) {}",
        "<html><body>hi</body></html>", '{"key": [1, 2, 3]}', "a_b_c", "camelCaseName", "x += 1;",
        "SELECT * FROM t WHERE id = 1;", "#include <stdio.h>", "    indented", "\tif x:\n\t\tpass",
        "std::vector<int> v;", "console.log('hi');", "a == b && c != d", "// comment", "/* block */",
        "path/to/file.txt", "https://example.com/a?b=c&d=e", "user@example.com", "$HOME/bin", "λx.x"]
SPECIAL = ["<s>", "</s>", "<unk>", "<s>hello", "hello</s>", "a<s>b", "<|endoftext|>", "x<|endoftext|>y",
           "<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|>Hi", "<|eot_id|>", "<think>", "</think>",
           "<0x41>", "< s >", "<|im_start|>", "<|start_header_id|>user<|end_header_id|>", "<<s>>", "<s> <s>",
           "text <|endoftext|> text"]
# Bytes that are not UTF-8: lone continuation bytes, truncated sequences, invalid lead bytes,
# a lead byte followed by ASCII. (Overlong forms and surrogates are left out: llama.cpp
# decodes them to code points that a JavaScript string cannot carry to it.)
INVALID = [b"\xff", b"\xfe\xff", b"\x80", b"abc\x80def", b"\xc3", b"\xc3(", b"abc\xe4\xb8", b"\xe4\xb8abc",
           b"\xf0\x9f\x99", b"\xf0\x9f\x99 ok", b"caf\xe9", b"\xbf\xbf", b"ok \xc3\xa9 \xc3", b"\xf8\x88\x80\x80\x80",
           b"mix \xff\xfe text", b"\xe2\x82", b"\xed\x9f\xbf ok", b"a\x00b", b"\x01\x02\x03", b"\x7f"]
PROSE = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
         "One day, she saw a big, red ball in the park! \"Can I play?\" she asked. The boy said: 'Yes, of course.'")


def main():
    out = []

    def add(kind, s):
        b = s if isinstance(s, bytes) else s.encode("utf-8")
        out.append({"kind": kind, "hex": b.hex()})

    for kind, items in [("whitespace", WHITESPACE), ("digits", DIGITS), ("punct", PUNCT), ("accents", ACCENTS),
                        ("cjk", CJK), ("emoji", EMOJI), ("code", CODE), ("special", SPECIAL), ("invalid", INVALID)]:
        for s in items:
            add(kind, s)
    add("prose", PROSE)
    add("prose", PROSE * 8)
    add("empty", "")
    # Seeded mixtures: fragments of every kind joined by random separators.
    rng = random.Random(20241130)
    pool = WHITESPACE + DIGITS + PUNCT + ACCENTS + CJK + EMOJI + CODE + SPECIAL + PROSE.split(" ")
    seps = ["", " ", "  ", "\n", "\t", "-", "'", " \n"]
    while len(out) < 330:
        parts = [rng.choice(pool) for _ in range(rng.randint(1, 6))]
        text = "".join(p + rng.choice(seps) for p in parts)
        if rng.random() < 0.1:
            cut = rng.randint(0, len(text))
            add("invalid", text[:cut].encode() + rng.choice(INVALID) + text[cut:].encode())
        else:
            add("mixed", text)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=0)


if __name__ == "__main__":
    main()
