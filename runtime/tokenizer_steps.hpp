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

// A piece of text between pre-tokenizer splits. `at_start`: it begins at offset 0 of
// the caller's text (Metaspace's "first" prepend scheme).
struct Word {
  std::string text;
  bool at_start = false;
};

// Applies the pre-tokenizer steps in order; the model then encodes each word alone.
void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::vector<Word>* words);

// GPT-2's pre-tokenizer pattern (HF ByteLevel with use_regex, llama.cpp "gpt-2").
extern const char* const kGpt2Pattern;

}  // namespace headwise::tok
