// PCRE2 behind tok::Regex: UTF + UCP (so \s, \p{L}, \w follow Unicode, as in the
// Oniguruma/fancy-regex engines HF tokenizers uses), JIT-compiled when the platform
// allows, with a JIT stack large enough for long runs of one class.
#include "runtime/tokenizer_regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace headwise::tok {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf), size_t(n));
}

// Frees what one find_all call allocated, on every path.
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ~MatchState() {
    if (data) pcre2_match_data_free(data);
    if (context) pcre2_match_context_free(context);
    if (stack) pcre2_jit_stack_free(stack);
  }
};

}  // namespace

Status Regex::compile(const std::string& pattern, const std::string& where, std::shared_ptr<const Regex>* out) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (code == nullptr)
    return format_error(where + ": regex " + pattern + " does not compile at offset " + std::to_string(offset) +
                        ": " + pcre2_message(err));
  // Without JIT (a platform PCRE2 has none for) matching is slower but the same.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::shared_ptr<Regex> r(new Regex());
  r->code_ = code;
  r->pattern_ = pattern;
  *out = std::move(r);
  return Status::Ok();
}

Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Status Regex::find_all(const char* text, size_t n, std::vector<std::pair<size_t, size_t>>* matches) const {
  matches->clear();
  if (n == 0) return Status::Ok();
  auto* code = static_cast<pcre2_code*>(code_);
  MatchState st;
  st.data = pcre2_match_data_create_from_pattern(code, nullptr);
  st.context = pcre2_match_context_create(nullptr);
  // 32 KiB grows to 64 MiB: a 1 MB run of one character class needs more than the
  // default 32 KiB with some patterns.
  st.stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
  if (!st.data || !st.context || !st.stack) return Status(StatusCode::internal, "regex " + pattern_ + ": out of memory");
  pcre2_jit_stack_assign(st.context, nullptr, st.stack);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text);
  size_t pos = 0;
  while (pos < n) {
    const int rc = pcre2_match(code, subject, n, pos, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return format_error("regex " + pattern_ + ": " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    size_t b = ov[0], e = ov[1];
    if (e == b) {
      // An empty match splits nothing: step over one character and search on.
      size_t next = b + 1;
      while (next < n && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      pos = next;
      continue;
    }
    matches->emplace_back(b, e);
    pos = e;
  }
  return Status::Ok();
}

}  // namespace headwise::tok
