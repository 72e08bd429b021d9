// What a tokenizer other than llama2.c's is made of: the vocabulary with its lookup
// keys, the merge table, the added/special tokens, the normalizer and pre-tokenizer
// steps, and the post-processing (BOS/EOS) and decoding rules. The loaders
// (tokenizer_hf.cpp, tokenizer_gguf.cpp) fill one in; Tokenizer::from_config checks it
// and builds the indexes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/tokenizer_regex.hpp"

namespace headwise::tok {

enum class ModelKind {
  kSpmScores,  // SentencePiece BPE: merge the adjacent pair whose piece scores highest
  kBpeRanks,   // BPE: merge the adjacent pair with the lowest merge rank
};

// How a token's text is turned back into bytes, and how a word's text is looked up.
enum class PieceText {
  kSentencePiece,  // "▁" is a space, "<0xHH>" a byte (byte fallback)
  kByteLevel,      // GPT-2's bytes-to-unicode alphabet: one character per byte
};

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;  // matched only with parse_special; skipped by decode(skip_special)
  bool lstrip = false;   // swallows the whitespace before it
  bool rstrip = false;   // swallows the whitespace after it
};

struct NormalizerStep {
  enum Kind { kNfc, kNfkc, kNfd, kNfkd, kPrepend, kReplace, kLowercase, kStrip } kind;
  std::string text;         // Prepend: what; Replace: the pattern string
  std::string replacement;  // Replace
  std::shared_ptr<const Regex> regex;  // Replace with a Regex pattern
  bool left = false, right = false;    // Strip
};

struct PreTokenizerStep {
  enum Kind {
    kSplit,      // regex matches split off (behavior below)
    kMetaspace,  // ' ' -> replacement, prefix, split before each replacement
    kDigits,     // runs of digits (or each digit) split off
    kByteLevel,  // optional prefix space and GPT-2 regex; the model works on bytes
  } kind = kSplit;
  enum Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext } behavior = kIsolated;
  std::shared_ptr<const Regex> regex;
  bool invert = false;
  std::string replacement;  // Metaspace
  enum Prepend { kAlways, kFirst, kNever } prepend = kAlways;  // Metaspace
  bool split = true;                                          // Metaspace
  bool individual_digits = false;                             // Digits
  bool add_prefix_space = false;                              // ByteLevel
  bool use_regex = true;                                      // ByteLevel: GPT-2 split
};

struct Config {
  ModelKind model = ModelKind::kBpeRanks;
  PieceText piece_text = PieceText::kSentencePiece;
  std::vector<std::string> pieces;  // as the file spells them (what piece() returns)
  std::vector<float> scores;        // kSpmScores
  std::vector<bool> control;        // per id: a special/control token
  // kBpeRanks: merges as pairs of pieces, in rank order.
  std::vector<std::pair<std::string, std::string>> merges;
  bool byte_fallback = false;  // unknown characters become <0xHH> tokens
  bool ignore_merges = false;  // a word that is a piece is that token (Llama 3)
  bool fuse_unk = false;
  int32_t unk_id = -1;
  // llama.cpp's SentencePiece and byte-fallback tokenizers take the text's bytes as they
  // are (a character that is not in the vocabulary falls back to bytes); the others
  // replace each invalid UTF-8 byte by U+FFFD first, as llama.cpp does.
  bool raw_bytes = false;
  // Drops the leading space of the first piece when decoding (HF Strip decoder,
  // SentencePiece's dummy prefix).
  bool strip_leading_space = false;
  // HF's Metaspace decoder: in the first token every "▁" is dropped, not just one.
  bool first_drops_all_meta = false;
  // "<0xHH>" pieces decode to their byte (SentencePiece byte fallback; HF: a ByteFallback
  // decoder); without it they decode as the text they spell.
  bool decode_byte_pieces = true;

  std::vector<AddedToken> added;  // matched in the text before anything else
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;

  std::vector<int32_t> prefix;  // added before the ids with add_special (BOS)
  std::vector<int32_t> suffix;  // and after (EOS)
  int32_t bos_id = -1;
  std::vector<int32_t> eos_ids;
  std::string chat_template;
  std::string source;  // file name, for messages
};

}  // namespace headwise::tok
