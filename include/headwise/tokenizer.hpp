// headwise::Tokenizer — text to token ids and back, for every vocabulary headwise reads:
//   * llama2.c's tokenizer.bin (scored pieces, byte fallback; Tokenizer::load);
//   * SentencePiece-style BPE with scores and byte fallback (GGUF "llama": Llama 2,
//     Mistral, Phi-3);
//   * BPE with merge ranks: byte-level with regex pre-tokenization (GGUF "gpt2", HF
//     tokenizer.json ByteLevel: GPT-2, Llama 3, Qwen2/3) or over characters with byte
//     fallback (HF tokenizer.json of Llama 2 / Mistral);
// with special and added tokens, add-BOS/EOS as the tokenizer's own configuration says,
// and decoding back to bytes. The loaders for GGUF and tokenizer.json files are in
// runtime/tokenizer_load.hpp. Merging is driven by a priority queue over adjacent pairs,
// so encoding takes O(n log n) in the length of the text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headwise/status.hpp"

namespace headwise {

namespace tok {
struct Config;  // runtime/tokenizer_config.hpp: what a tokenizer file describes
struct State;   // runtime/tokenizer_state.hpp: the lookup tables built from it
}

struct EncodeOptions {
  // Add what the tokenizer's configuration adds around a text (BOS for Llama, nothing
  // for GPT-2 or Qwen); false adds nothing.
  bool add_special = true;
  // Text equal to a special (control) token becomes that token; otherwise it is plain
  // text. Added tokens that are not special are always matched, as in HF tokenizers and
  // llama.cpp.
  bool parse_special = false;
};

class Tokenizer {
 public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Reads `vocab_size` pieces from a llama2.c tokenizer.bin. Errors name the file and
  // what is wrong (missing file, truncated at piece N, negative length, ...).
  static Status load(const std::string& path, int vocab_size, std::unique_ptr<Tokenizer>* out);

  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  // llama2.c's BOS/EOS ids; other vocabularies: bos_id() / eos_ids().
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;

  // llama2.c: BOS (if add_bos), the dummy-prefix space when text is non-empty, one id per
  // UTF-8 code point (byte fallback id = byte + 3 when a code point has no piece), then
  // the highest-scoring adjacent merge repeatedly (leftmost on ties) until none applies.
  // Other tokenizers: encode(text, {add_special = add_bos, parse_special = false}).
  std::vector<int32_t> encode(const std::string& text, bool add_bos) const;
  std::vector<int32_t> encode(const std::string& text, const EncodeOptions& options) const;

  // The bytes of `token` following `prev` (prev < 0: the first token): after BOS (or at
  // the start, for SentencePiece vocabularies other than llama2.c's) the dummy-prefix
  // space is dropped; "<0xHH>" byte pieces are that raw byte; byte-level pieces are
  // mapped back to their bytes; special tokens give their text. Concatenating these over
  // a sequence gives back the text exactly. An id outside the vocabulary gives "".
  std::string piece_bytes(int32_t prev, int32_t token) const;

  // What to print for `token` following `prev`. llama2.c: piece_bytes(), except that a
  // lone byte which is neither printable nor whitespace in the C locale prints as
  // nothing (its decode + safe_printf). Other tokenizers: piece_bytes(), and nothing for
  // special (control) tokens. The bytes may end inside a UTF-8 character: stream them
  // through Utf8Stream before showing them.
  std::string decode(int32_t prev, int32_t token) const;

  // The text of a sequence: piece_bytes() concatenated, special tokens left out when
  // skip_special (what HF tokenizers' decode(ids, skip_special_tokens) gives).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = true) const;

  // Builds a llama2.c-style tokenizer from pieces and scores (built-in and synthetic
  // models).
  static std::unique_ptr<Tokenizer> from_pieces(std::vector<std::string> pieces,
                                                std::vector<float> scores);
  // Builds any other tokenizer from its configuration (the loaders use this).
  static Status from_config(tok::Config config, std::unique_ptr<Tokenizer>* out);

  const std::string& piece(int32_t id) const { return pieces_[id]; }
  float score(int32_t id) const { return id < int32_t(scores_.size()) ? scores_[id] : 0.0f; }

  int32_t bos_id() const;                 // -1: none
  const std::vector<int32_t>& eos_ids() const;  // EOS and every end-of-turn token
  bool add_bos() const;                   // what encode adds by default
  bool add_eos() const;
  bool is_special(int32_t id) const;      // a control token (BOS, EOS, <|im_start|>, ...)
  // The special tokens' texts by id (for templates and logs).
  std::vector<std::pair<int32_t, std::string>> special_tokens() const;
  // The Jinja chat template from GGUF `tokenizer.chat_template` or tokenizer_config.json
  // `chat_template`; "" when the files have none. Rendering it is the server's job.
  const std::string& chat_template() const;
  // "llama2c", "spm" (scores), "bpe" (ranks, byte fallback) or "byte-bpe" (byte-level).
  const char* kind_name() const;

  // Writes a llama2.c tokenizer.bin (used by `headwise convert`); other tokenizers are
  // refused with unsupported.
  Status save(const std::string& path) const;

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  int max_token_length_ = 0;
  bool llama2c_ = true;  // tokenizer.bin semantics (load, from_pieces)
  std::unique_ptr<tok::State> state_;
  void index_llama2c();
  std::vector<int32_t> encode_llama2c(const std::string& text, bool add_bos) const;
};

// Turns a stream of bytes into complete UTF-8 characters: a character split across
// tokens is held back until its last byte arrives. A byte that cannot be part of a
// well-formed character (Unicode 15 table 3-7: overlong forms, surrogates, > U+10FFFF,
// stray continuation bytes) becomes U+FFFD, one per byte, so the output is always valid
// UTF-8 and the same bytes always give the same text.
class Utf8Stream {
 public:
  std::string push(const std::string& bytes);
  // Ends the stream: held bytes of an unfinished character become U+FFFD each.
  std::string finish();

 private:
  std::string held_;
};

}  // namespace headwise
