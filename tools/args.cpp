#include "tools/args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "headwise/limits.hpp"

namespace headwise::tools {

bool Args::parse(int argc, char** argv, const std::set<std::string>& flags,
                 const std::set<std::string>& options) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string name = a.substr(2), value;
      const size_t eq = name.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      if (flags.count(name)) {
        if (inline_value) {
          error_ = "option --" + name + " takes no value";
          return false;
        }
        values_[name] = "1";
      } else if (options.count(name)) {
        if (!inline_value) {
          if (i + 1 >= argc) {
            error_ = "option --" + name + " needs a value";
            return false;
          }
          value = argv[++i];
        }
        values_[name] = value;
      } else {
        error_ = "unknown option --" + name;
        return false;
      }
    } else if (a.size() == 2 && a[0] == '-' && a[1] != '-' && options.count(a.substr(1))) {
      // single-letter aliases such as -n and -o
      if (i + 1 >= argc) {
        error_ = "option " + a + " needs a value";
        return false;
      }
      values_[a.substr(1)] = argv[++i];
    } else {
      positional_.push_back(a);
    }
  }
  return true;
}

std::string Args::str(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

long long Args::integer(const std::string& name, long long def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno || end == it->second.c_str() || *end != '\0') {
    if (error_.empty()) error_ = "option --" + name + ": '" + it->second + "' is not an integer";
    return def;
  }
  return v;
}

double Args::number(const std::string& name, double def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (errno || end == it->second.c_str() || *end != '\0') {
    if (error_.empty()) error_ = "option --" + name + ": '" + it->second + "' is not a number";
    return def;
  }
  // strtod reads "nan" and "inf"; no option of headwise means either.
  if (!std::isfinite(v)) {
    if (error_.empty()) error_ = "option --" + name + ": '" + it->second + "' is not a finite number";
    return def;
  }
  return v;
}

long long Args::threads(const std::string& name) const {
  const long long v = integer(name, 0);
  if (v < 0 || v > kMaxThreads) {
    if (error_.empty())
      error_ = "option --" + name + ": " + std::to_string(v) + " is outside 0.." +
               std::to_string(kMaxThreads) + " (0: all cores; " + std::to_string(kMaxThreads) +
               " is the most headwise accepts)";
    return 0;
  }
  return v;
}

}  // namespace headwise::tools
