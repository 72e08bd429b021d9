// UTF-8 helpers (runtime/tokenizer_utf8.hpp) and headwise::Utf8Stream.
#include "runtime/tokenizer_utf8.hpp"

#include <array>

#include "headwise/tokenizer.hpp"

namespace headwise::tok {
namespace {

constexpr uint32_t kReplacement = 0xFFFD;

// Length of the well-formed character at s[0, n), 0 when ill-formed or incomplete;
// *incomplete is set when the bytes so far are a valid prefix (Unicode table 3-7).
size_t well_formed_length(const unsigned char* s, size_t n, bool* incomplete) {
  *incomplete = false;
  const unsigned char b = s[0];
  if (b < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) len = 2;
  else if (b == 0xE0) len = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC) len = 3;
  else if (b == 0xED) len = 3, hi = 0x9F;
  else if (b >= 0xEE && b <= 0xEF) len = 3;
  else if (b == 0xF0) len = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) len = 4;
  else if (b == 0xF4) len = 4, hi = 0x8F;
  else return 0;
  for (size_t k = 1; k < len; ++k) {
    if (k >= n) {
      *incomplete = true;
      return 0;
    }
    const unsigned char c = s[k];
    if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) return 0;
  }
  return len;
}

std::array<std::string, 256> make_byte_alphabet() {
  std::array<std::string, 256> t;
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    append_utf8(&t[b], self ? uint32_t(b) : next++);
  }
  return t;
}

}  // namespace

void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

bool is_valid_utf8(const char* s, size_t n) {
  const auto* u = reinterpret_cast<const unsigned char*>(s);
  for (size_t i = 0; i < n;) {
    if (u[i] < 0x80) {
      ++i;
      continue;
    }
    bool incomplete;
    const size_t len = well_formed_length(u + i, n - i, &incomplete);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string sanitize_utf8(const std::string& text) {
  if (is_valid_utf8(text.data(), text.size())) return text;
  std::string out;
  out.reserve(text.size() + 16);
  const auto* u = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char b = u[i];
    // llama.cpp's unicode_cpt_from_utf8: the lead byte's high bits give the length;
    // the next bytes must be continuation bytes; nothing else is checked.
    size_t len = 0;
    uint32_t cp = 0;
    if (b < 0x80) len = 1, cp = b;
    else if ((b & 0x40) == 0) len = 0;
    else if ((b & 0x20) == 0) len = 2, cp = b & 0x1F;
    else if ((b & 0x10) == 0) len = 3, cp = b & 0x0F;
    else if ((b & 0x08) == 0) len = 4, cp = b & 0x07;
    if (len > 1) {
      if (i + len > n) {
        len = 0;
      } else {
        for (size_t k = 1; k < len; ++k) {
          if ((u[i + k] & 0xC0) != 0x80) {
            len = 0;
            break;
          }
          cp = (cp << 6) | (u[i + k] & 0x3F);
        }
      }
    }
    if (len == 0) {
      append_utf8(&out, kReplacement);
      ++i;
      continue;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacement;
    append_utf8(&out, cp);
    i += len;
  }
  return out;
}

uint32_t next_code_point(const std::string& s, size_t* i) {
  const auto* u = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char b = u[*i];
  if (b < 0x80) return u[(*i)++];
  const size_t len = utf8_lead_length(b);
  uint32_t cp = len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < len && *i + k < s.size(); ++k) cp = (cp << 6) | (u[*i + k] & 0x3F);
  *i += len;
  return cp;
}

const std::string& byte_to_unicode(unsigned char b) {
  static const std::array<std::string, 256> table = make_byte_alphabet();
  return table[b];
}

int unicode_to_byte(uint32_t cp) {
  if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return int(cp);
  if (cp < 256 || cp >= 256 + 68) return -1;
  // The 68 bytes outside the printable ranges, in increasing order, took 256, 257, ...
  static const std::array<int, 68> remapped = [] {
    std::array<int, 68> r{};
    int k = 0;
    for (int b = 0; b < 256; ++b)
      if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) r[k++] = b;
    return r;
  }();
  return remapped[cp - 256];
}

bool byte_level_decode(const std::string& piece, std::string* bytes) {
  bytes->clear();
  if (!is_valid_utf8(piece.data(), piece.size())) return false;
  for (size_t i = 0; i < piece.size();) {
    const int b = unicode_to_byte(next_code_point(piece, &i));
    if (b < 0) return false;
    bytes->push_back(char(b));
  }
  return true;
}

}  // namespace headwise::tok

namespace headwise {

std::string Utf8Stream::push(const std::string& bytes) {
  held_ += bytes;
  std::string out;
  const auto* u = reinterpret_cast<const unsigned char*>(held_.data());
  const size_t n = held_.size();
  size_t i = 0;
  while (i < n) {
    bool incomplete;
    const size_t len = tok::well_formed_length(u + i, n - i, &incomplete);
    if (len > 0) {
      out.append(held_, i, len);
      i += len;
    } else if (incomplete) {
      break;  // wait for the rest of this character
    } else {
      tok::append_utf8(&out, tok::kReplacement);
      ++i;
    }
  }
  held_.erase(0, i);
  return out;
}

std::string Utf8Stream::finish() {
  std::string out;
  for (size_t i = 0; i < held_.size(); ++i) tok::append_utf8(&out, tok::kReplacement);
  held_.clear();
  return out;
}

}  // namespace headwise
