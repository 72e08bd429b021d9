// A compiled pre-tokenizer regex (PCRE2 with Unicode properties and JIT): the patterns
// of tokenizer.json Split steps and of llama.cpp's pre-tokenizer types.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headwise/status.hpp"

namespace headwise::tok {

class Regex {
 public:
  // `where` names the file and field in error messages.
  static Status compile(const std::string& pattern, const std::string& where,
                        std::shared_ptr<const Regex>* out);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // The [begin, end) byte ranges of the non-overlapping matches in text[0, n), left to
  // right; the text must be valid UTF-8. Thread-safe (per-call match data).
  Status find_all(const char* text, size_t n, std::vector<std::pair<size_t, size_t>>* matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*
  std::string pattern_;
};

}  // namespace headwise::tok
