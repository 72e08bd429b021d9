// The text transformations before the BPE model: normalizers (NFC/NFKC via utf8proc,
// Prepend, Replace, Lowercase, Strip) and pre-tokenizers (regex Split, Metaspace,
// Digits, ByteLevel), with HF tokenizers' semantics.
#pragma once

#include <string>
#include <vector>

#include "runtime/tokenizer_config.hpp"

namespace headwise::tok {

// Applies the normalizer steps in order to valid UTF-8 text.
std::string normalize(const std::vector<NormalizerStep>& steps, std::string text);

// A piece of text between pre-tokenizer splits: words.text[b, e). `at_start`: it begins
// at offset 0 of the caller's text (Metaspace's "first" prepend scheme).
struct Word {
  size_t b, e;
  bool at_start;
};
// The words of one text as spans of one buffer: splitting copies no text; only steps
// that change it (Metaspace, ByteLevel's prefix space) rebuild the buffer.
struct Words {
  std::string text;
  std::vector<Word> spans;
};

// Applies the pre-tokenizer steps in order; the model then encodes each word alone.
void pre_tokenize(const std::vector<PreTokenizerStep>& steps, Words* words);

// GPT-2's pre-tokenizer pattern (HF ByteLevel with use_regex, llama.cpp "gpt-2").
extern const char* const kGpt2Pattern;

}  // namespace headwise::tok
