// UTF-8 helpers of the tokenizers: character lengths the way llama.cpp groups bytes,
// replacing invalid sequences the way llama.cpp does before its regexes, encoding code
// points, and GPT-2's bytes-to-unicode alphabet of byte-level vocabularies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace headwise::tok {

// Bytes in the character led by `b`, from the lead byte alone (a continuation or
// invalid byte counts 1): how SentencePiece-style tokenizers cut text into symbols.
inline size_t utf8_lead_length(unsigned char b) {
  static const uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3};
  return b >= 0xF0 ? 4 : kLen[b >> 4];
}

void append_utf8(std::string* out, uint32_t cp);

// The text as llama.cpp's unicode_cpts_from_utf8 reads it: each byte that does not
// start a sequence with enough continuation bytes becomes U+FFFD (one per byte), and the
// result is valid UTF-8 (code points llama.cpp accepts but UTF-8 forbids, surrogates
// and values above U+10FFFF, also become U+FFFD). Returns the text itself when valid.
std::string sanitize_utf8(const std::string& text);
bool is_valid_utf8(const char* s, size_t n);

// GPT-2's bytes_to_unicode: the character (as UTF-8) that stands for byte b, and back
// (-1 for a character outside the 256).
const std::string& byte_to_unicode(unsigned char b);
int unicode_to_byte(uint32_t cp);
// The bytes a byte-level piece stands for; false when a character is outside the
// alphabet (added tokens spelled as plain text).
bool byte_level_decode(const std::string& piece, std::string* bytes);

// Decodes one code point at s[*i] (valid UTF-8 assumed); advances *i.
uint32_t next_code_point(const std::string& s, size_t* i);

// "<0xHH>" (upper- or lower-case hex) → HH; -1 for any other piece (byte-fallback pieces).
inline int byte_piece_value(const std::string& p) {
  if (p.size() != 6 || p.compare(0, 3, "<0x") != 0 || p[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = p[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace headwise::tok
