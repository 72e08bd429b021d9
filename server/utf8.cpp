#include "server/utf8.hpp"

namespace headwise::server {

size_t utf8_complete_prefix(const std::string& s) {
  const size_t n = s.size();
  // Walk back over at most 3 continuation bytes (10xxxxxx) to the lead byte.
  size_t i = n, cont = 0;
  while (i > 0 && cont < 4) {
    const unsigned char c = static_cast<unsigned char>(s[i - 1]);
    if ((c & 0xC0) != 0x80) break;
    --i;
    ++cont;
  }
  if (i == 0) return n;  // only continuation bytes: invalid, nothing to wait for
  const unsigned char lead = static_cast<unsigned char>(s[i - 1]);
  size_t need;
  if (lead < 0x80) need = 0;
  else if ((lead & 0xE0) == 0xC0) need = 1;
  else if ((lead & 0xF0) == 0xE0) need = 2;
  else if ((lead & 0xF8) == 0xF0) need = 3;
  else return n;            // an invalid lead byte never completes
  if (need == 0) return n;  // ASCII then stray continuation bytes: invalid, pass on
  if (cont < need) return i - 1;  // the character is still arriving
  return n;
}

}  // namespace headwise::server
