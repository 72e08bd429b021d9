// Pre-tokenizer steps (runtime/tokenizer_steps.hpp) with HF tokenizers' semantics:
// each step cuts every current word into smaller words; the pieces of a Split are kept
// or merged as its `behavior` says.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <utf8proc.h>

#include "runtime/tokenizer_steps.hpp"
#include "runtime/tokenizer_utf8.hpp"

namespace headwise::tok {

const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

struct Span {
  size_t b, e;
  bool match;
};

// The whole of [0, n) as alternating non-match / match spans (empty gaps left out).
std::vector<Span> cover(size_t n, const std::vector<std::pair<size_t, size_t>>& matches, bool invert) {
  std::vector<Span> out;
  size_t pos = 0;
  for (const auto& m : matches) {
    if (m.first > pos) out.push_back({pos, m.first, invert});
    out.push_back({m.first, m.second, !invert});
    pos = m.second;
  }
  if (pos < n) out.push_back({pos, n, invert});
  return out;
}

// HF's SplitDelimiterBehavior applied to the covering spans.
std::vector<std::pair<size_t, size_t>> apply_behavior(const std::vector<Span>& spans,
                                                      PreTokenizerStep::Behavior behavior) {
  std::vector<std::pair<size_t, size_t>> out;
  switch (behavior) {
    case PreTokenizerStep::kIsolated:
      for (const Span& s : spans) out.emplace_back(s.b, s.e);
      break;
    case PreTokenizerStep::kRemoved:
      for (const Span& s : spans)
        if (!s.match) out.emplace_back(s.b, s.e);
      break;
    case PreTokenizerStep::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.match && !previous_match && !out.empty()) out.back().second = s.e;
        else out.emplace_back(s.b, s.e);
        previous_match = s.match;
      }
      break;
    }
    case PreTokenizerStep::kMergedWithNext: {
      bool previous_match = false;
      for (size_t k = spans.size(); k-- > 0;) {
        const Span& s = spans[k];
        if (s.match && !previous_match && !out.empty()) out.back().first = s.b;
        else out.emplace_back(s.b, s.e);
        previous_match = s.match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
  }
  return out;
}

void emit(const Word& w, const std::vector<std::pair<size_t, size_t>>& parts, std::vector<Word>* out) {
  for (const auto& p : parts)
    if (p.second > p.first) out->push_back({w.text.substr(p.first, p.second - p.first), w.at_start && p.first == 0});
}

void regex_split(const Regex& re, bool invert, PreTokenizerStep::Behavior behavior, const Word& w,
                 std::vector<Word>* out) {
  std::vector<std::pair<size_t, size_t>> m;
  // find_all fails only on a PCRE2 resource limit: the word then stays whole.
  if (!re.find_all(w.text.data(), w.text.size(), &m).ok()) {
    out->push_back(w);
    return;
  }
  emit(w, apply_behavior(cover(w.text.size(), m, invert), behavior), out);
}

bool is_numeric(uint32_t cp) {
  const utf8proc_category_t c = utf8proc_category(utf8proc_int32_t(cp));
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

void digits_split(bool individual, const Word& w, std::vector<Word>* out) {
  std::vector<Span> spans;
  const std::string& t = w.text;
  for (size_t i = 0; i < t.size();) {
    const size_t b = i;
    const bool digit = is_numeric(next_code_point(t, &i));
    if (digit && !individual && !spans.empty() && spans.back().match && spans.back().e == b) spans.back().e = i;
    else if (!digit && !spans.empty() && !spans.back().match) spans.back().e = i;
    else spans.push_back({b, i, digit});
  }
  emit(w, apply_behavior(spans, PreTokenizerStep::kIsolated), out);
}

const Regex& gpt2_regex() {
  static const std::shared_ptr<const Regex> re = [] {
    std::shared_ptr<const Regex> r;
    // A fixed pattern: it compiles (a test checks) or nothing tokenizes.
    (void)Regex::compile(kGpt2Pattern, "GPT-2 pre-tokenizer", &r);
    return r;
  }();
  return *re;
}

}  // namespace

void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::vector<Word>* words) {
  std::vector<Word> next;
  for (const PreTokenizerStep& s : steps) {
    next.clear();
    next.reserve(words->size());
    for (Word& w : *words) {
      switch (s.kind) {
        case PreTokenizerStep::kSplit:
          regex_split(*s.regex, s.invert, s.behavior, w, &next);
          break;
        case PreTokenizerStep::kDigits:
          digits_split(s.individual_digits, w, &next);
          break;
        case PreTokenizerStep::kMetaspace: {
          std::string t;
          t.reserve(w.text.size() + 8);
          for (char c : w.text) {
            if (c == ' ') t += s.replacement;
            else t.push_back(c);
          }
          const bool starts = t.compare(0, s.replacement.size(), s.replacement) == 0;
          if (!starts && (s.prepend == PreTokenizerStep::kAlways || (s.prepend == PreTokenizerStep::kFirst && w.at_start)))
            t.insert(0, s.replacement);
          Word mw{std::move(t), w.at_start};
          if (!s.split) {
            next.push_back(std::move(mw));
            break;
          }
          std::vector<std::pair<size_t, size_t>> m;
          for (size_t pos = mw.text.find(s.replacement); pos != std::string::npos;
               pos = mw.text.find(s.replacement, pos + s.replacement.size()))
            m.emplace_back(pos, pos + s.replacement.size());
          emit(mw, apply_behavior(cover(mw.text.size(), m, false), PreTokenizerStep::kMergedWithNext), &next);
          break;
        }
        case PreTokenizerStep::kByteLevel: {
          Word bw = std::move(w);
          if (s.add_prefix_space && (bw.text.empty() || bw.text[0] != ' ')) bw.text.insert(0, " ");
          if (s.use_regex) regex_split(gpt2_regex(), false, PreTokenizerStep::kIsolated, bw, &next);
          else next.push_back(std::move(bw));
          break;
        }
      }
    }
    words->swap(next);
  }
}

}  // namespace headwise::tok
