// fuzz-sources: tools/args.cpp
// Fuzz target: the command-line parser of every subcommand (tools/args.cpp). Input:
// NUL-separated arguments. Property: any argument list gives a parse result or an
// error message, never a crash; typed getters on malformed values record an error.
#include <cstdint>
#include <string>
#include <vector>

#include "tools/args.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size && parts.size() < 64; ++i) {
    if (data[i] == 0) parts.emplace_back();
    else parts.back() += static_cast<char>(data[i]);
  }
  std::vector<char*> argv;
  for (std::string& p : parts) argv.push_back(p.data());
  headwise::tools::Args a;
  if (!a.parse(static_cast<int>(argv.size()), argv.data(), {"help", "verbose", "json"},
               {"tokens", "n", "temp", "top-p", "threads", "seed", "o"}))
    return 0;
  (void)a.integer("n", 1);
  (void)a.integer("threads", 0);
  (void)a.number("temp", 1.0);
  (void)a.number("top-p", 0.9);
  (void)a.str("tokens");
  return 0;
}
