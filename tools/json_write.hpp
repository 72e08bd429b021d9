// JSON output for the CLI's --json modes (bench attention, bench model), written by
// hand: a handful of numbers and strings per line, in a fixed key order that the tests
// and bench/*.py read.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace headwise::tools {

// A JSON number (6 significant digits), or null for "not measured".
inline std::string jnum(double v, bool valid = true) {
  if (!valid) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

inline std::string jstr(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else {
      r += char(c);
    }
  }
  return r + "\"";
}

using JsonFields = std::vector<std::pair<std::string, std::string>>;  // key, JSON value

inline std::string jobj(const JsonFields& f) {
  std::string r = "{";
  for (size_t i = 0; i < f.size(); ++i) r += (i ? ", " : "") + jstr(f[i].first) + ": " + f[i].second;
  return r + "}";
}

inline std::string jarr(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string r = "[";
  for (size_t i = 0; i < items.size(); ++i) r += (i ? sep : "") + items[i];
  return r + "]";
}

}  // namespace headwise::tools
