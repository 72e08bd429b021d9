#include "server/text_assembler.hpp"

#include <algorithm>

#include "server/utf8.hpp"

namespace headwise::server {

std::string TextAssembler::push(const std::string& bytes, bool* stopped) {
  *stopped = false;
  held_ += bytes;
  // Sent text never holds a whole stop string nor ends with a prefix of one, so a match
  // lies entirely inside held_.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    std::string out = held_.substr(0, first);
    held_.clear();
    *stopped = true;
    return out;
  }
  // Hold the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k)
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  const size_t safe = utf8_complete_prefix(held_.substr(0, held_.size() - hold));
  std::string out = held_.substr(0, safe);
  held_.erase(0, safe);
  return out;
}

std::string TextAssembler::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace headwise::server
