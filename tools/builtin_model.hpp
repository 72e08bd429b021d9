// The model `headwise run` falls back to when ../shared/models is not there: the
// "tiny" synthetic model (random weights, built-in character tokenizer).
#pragma once

#include <memory>

#include "headwise/model.hpp"

namespace headwise::tools {

inline Status builtin_model(std::shared_ptr<const Model>* out) {
  return Model::synthetic("tiny", 20261129, out);
}

}  // namespace headwise::tools
