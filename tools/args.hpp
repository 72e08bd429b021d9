// A small command-line parser for the headwise subcommands: "--name value",
// "--name=value" and boolean "--flag", positional arguments kept in order. Unknown
// options and missing or malformed values are errors with a message naming the option.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace headwise::tools {

class Args {
 public:
  // `flags` take no value; `options` take one. Anything else starting with "--" is an
  // error. Returns false and sets error() on bad input.
  bool parse(int argc, char** argv, const std::set<std::string>& flags,
             const std::set<std::string>& options);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  const std::vector<std::string>& positional() const { return positional_; }
  const std::string& error() const { return error_; }

  // Typed getters: the default when absent; on a malformed value they record an error
  // (checked with ok()) and return the default.
  std::string str(const std::string& name, const std::string& def = "") const;
  long long integer(const std::string& name, long long def) const;
  double number(const std::string& name, double def) const;  // finite numbers only
  // A thread count: 0 (all cores) .. kMaxThreads; anything else records an error.
  long long threads(const std::string& name = "threads") const;
  bool ok() const { return error_.empty(); }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  mutable std::string error_;
};

}  // namespace headwise::tools
