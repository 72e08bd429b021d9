// The lookup structures a Tokenizer builds from its configuration once, shared by the
// encode and decode paths (tokenizer_encode.cpp, tokenizer.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tokenizer_config.hpp"
#include "runtime/tokenizer_merge.hpp"

namespace headwise::tok {

struct State {
  Config config;
  // What a word's text is looked up as, per id: the piece itself, or for byte-level
  // vocabularies the bytes its characters stand for. `index` views these strings.
  std::vector<std::string> keys;
  PieceIndex index;                // key -> lowest id
  std::vector<std::string> bytes;  // what each id decodes to
  std::vector<uint8_t> special;    // per id: control/special (skipped by decode)
  MergeTable merges;
  std::array<int32_t, 256> byte_ids;  // <0xHH> byte-fallback tokens, -1 if absent
  std::array<int32_t, 256> byte_symbol_ids;  // byte-level: the token of one byte
  // Added tokens that can start with byte b, longest first (indexes into config.added).
  std::array<std::vector<int32_t>, 256> added_by_first_byte;
  std::vector<int32_t> special_list;  // the special ids, ascending
  // SentencePiece-style vocabularies: byte b is set when some piece holds b right before
  // a "▁". A symbol starting with ▁ after a symbol ending in a byte not set here can never
  // be merged with it, so the text is cut there into words merged (and cached) alone:
  // the same result as merging the whole text, with small queues.
  std::array<bool, 256> joins_before_meta{};
  // llama2.c: byte pair (a, b) is set when some piece holds a right before b. Adjacent
  // symbols whose pieces meet in a pair not set can never merge: the text is cut there.
  std::vector<bool> pair_in_piece;  // 256 * 256
};

// Checks `config` and builds the state; errors name config.source.
Status build_state(Config config, const std::vector<std::string>& pieces, State* out);

// Encodes with a non-llama2.c tokenizer.
std::vector<int32_t> encode_text(const State& st, const std::string& text, bool add_special, bool parse_special);

}  // namespace headwise::tok
