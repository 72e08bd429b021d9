// The model the commands (run, maps, heads) use when none is named: stories260K from
// ../shared/models when it is there, else the "tiny" synthetic model (random weights,
// built-in character tokenizer).
#pragma once

#include <cstdio>
#include <memory>

#include "headwise/model.hpp"

namespace headwise::tools {

constexpr const char* kDefaultModel = "../shared/models/stories260K/stories260K.bin";
constexpr const char* kDefaultTokenizer = "../shared/models/stories260K/tok512.bin";

// True when kDefaultModel can be opened; then *path and (if empty) *tokenizer are set.
inline bool default_model(std::string* path, std::string* tokenizer) {
  std::FILE* f = std::fopen(kDefaultModel, "rb");
  if (!f) return false;
  std::fclose(f);
  *path = kDefaultModel;
  if (tokenizer->empty()) *tokenizer = kDefaultTokenizer;
  return true;
}

inline Status builtin_model(std::shared_ptr<const Model>* out) {
  return Model::synthetic("tiny", 20261129, out);
}

}  // namespace headwise::tools
