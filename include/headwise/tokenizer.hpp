// The llama2.c tokenizer (tokenizer.bin format, ../shared/models/README.md): a
// sentencepiece-style vocabulary of scored pieces with byte fallback, BPE-merged by
// score.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headwise/status.hpp"

namespace headwise {

class Tokenizer {
 public:
  // Reads `vocab_size` pieces from a tokenizer.bin. Errors name the file and what is
  // wrong (missing file, truncated at piece N, negative length, ...).
  static Status load(const std::string& path, int vocab_size, std::unique_ptr<Tokenizer>* out);

  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;

  // BOS (if add_bos), the dummy-prefix space when text is non-empty, one id per UTF-8
  // code point (byte fallback id = byte + 3 when a code point has no piece), then the
  // highest-scoring adjacent merge repeatedly until none applies.
  std::vector<int32_t> encode(const std::string& text, bool add_bos) const;

  // The bytes of `token` following `prev`: after BOS a leading space is dropped;
  // "<0xHH>" pieces are that raw byte. Concatenating these over a sequence gives back
  // the text exactly (used for labels and round trips). An id outside the vocabulary
  // gives "".
  std::string piece_bytes(int32_t prev, int32_t token) const;

  // What llama2.c prints for `token` following `prev`: piece_bytes(), except that a
  // lone byte which is neither printable nor whitespace in the C locale (a control
  // byte, or a byte >= 0x80 of a split UTF-8 character) prints as nothing — its
  // decode + safe_printf, so generated text matches the reference byte for byte.
  std::string decode(int32_t prev, int32_t token) const;

  // Builds a tokenizer from pieces and scores (built-in and synthetic models).
  static std::unique_ptr<Tokenizer> from_pieces(std::vector<std::string> pieces,
                                                std::vector<float> scores);

  const std::string& piece(int32_t id) const { return pieces_[id]; }
  float score(int32_t id) const { return scores_[id]; }

  // Writes a tokenizer.bin (used by `headwise convert`).
  Status save(const std::string& path) const;

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  int max_token_length_ = 0;
  // sorted (piece, id) for lookups during encode
  std::vector<std::pair<std::string, int32_t>> sorted_;
  int32_t lookup(const std::string& s) const;
};

}  // namespace headwise
