// Normalizer steps (runtime/tokenizer_steps.hpp). Unicode normal forms come from
// utf8proc; the rest follows HF tokenizers' normalizers of the same names.
#include <cstdlib>
#include <string>

#include <utf8proc.h>

#include "runtime/tokenizer_steps.hpp"
#include "runtime/tokenizer_utf8.hpp"

namespace headwise::tok {
namespace {

std::string normal_form(const std::string& text, int options) {
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          utf8proc_ssize_t(text.size()), &dst,
                                          static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  // The text is valid UTF-8 (sanitised before), so utf8proc cannot refuse it; should it
  // run out of memory the text stays as it was.
  if (n < 0 || dst == nullptr) return text;
  std::string out(reinterpret_cast<char*>(dst), size_t(n));
  std::free(dst);
  return out;
}

std::string replace_all(const std::string& text, const std::string& pattern, const std::string& with) {
  if (pattern.empty()) return text;
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (;;) {
    const size_t hit = text.find(pattern, pos);
    if (hit == std::string::npos) break;
    out.append(text, pos, hit - pos);
    out += with;
    pos = hit + pattern.size();
  }
  out.append(text, pos, std::string::npos);
  return out;
}

bool is_unicode_space(uint32_t cp) {
  const utf8proc_category_t c = utf8proc_category(utf8proc_int32_t(cp));
  // Unicode's White_Space property (Rust's char::is_whitespace, which HF's Strip uses).
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0x2028 || cp == 0x2029 || c == UTF8PROC_CATEGORY_ZS;
}

}  // namespace

std::string normalize(const std::vector<NormalizerStep>& steps, std::string text) {
  for (const NormalizerStep& s : steps) {
    switch (s.kind) {
      case NormalizerStep::kNfc: text = normal_form(text, UTF8PROC_COMPOSE); break;
      case NormalizerStep::kNfkc: text = normal_form(text, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
      case NormalizerStep::kNfd: text = normal_form(text, UTF8PROC_DECOMPOSE); break;
      case NormalizerStep::kNfkd: text = normal_form(text, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
      case NormalizerStep::kPrepend:
        if (!text.empty()) text.insert(0, s.text);
        break;
      case NormalizerStep::kReplace:
        if (s.regex) {
          std::vector<std::pair<size_t, size_t>> m;
          // find_all only fails on a PCRE2 resource limit; the text then stays as it was.
          if (!s.regex->find_all(text.data(), text.size(), &m).ok()) break;
          std::string out;
          size_t pos = 0;
          for (const auto& r : m) {
            out.append(text, pos, r.first - pos);
            out += s.replacement;
            pos = r.second;
          }
          out.append(text, pos, std::string::npos);
          text = std::move(out);
        } else {
          text = replace_all(text, s.text, s.replacement);
        }
        break;
      case NormalizerStep::kLowercase: {
        std::string out;
        out.reserve(text.size());
        for (size_t i = 0; i < text.size();) {
          const uint32_t cp = next_code_point(text, &i);
          // The one unconditional multi-character lowercase mapping (SpecialCasing.txt),
          // which utf8proc's simple mapping lacks and Rust's to_lowercase applies.
          if (cp == 0x130) out += "i\xCC\x87";
          else append_utf8(&out, uint32_t(utf8proc_tolower(utf8proc_int32_t(cp))));
        }
        text = std::move(out);
        break;
      }
      case NormalizerStep::kStrip: {
        size_t b = 0, e = text.size();
        if (s.left) {
          while (b < e) {
            size_t i = b;
            if (!is_unicode_space(next_code_point(text, &i))) break;
            b = i;
          }
        }
        if (s.right) {
          while (e > b) {
            size_t start = e - 1;
            while (start > b && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
            size_t i = start;
            if (!is_unicode_space(next_code_point(text, &i))) break;
            e = start;
          }
        }
        text = text.substr(b, e - b);
        break;
      }
    }
  }
  return text;
}

}  // namespace headwise::tok
