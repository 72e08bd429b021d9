// The one way a Model is made, whatever its source (a description file, a llama2.c
// checkpoint, a synthetic preset): graph → plan → ModelInfo.
#pragma once

#include <memory>
#include <string>

#include "graph/description.hpp"
#include "graph/graph.hpp"
#include "headwise/model.hpp"

namespace headwise {

struct ModelBuilder {
  static Status finish(const graph::ModelDesc& desc, std::unique_ptr<graph::WeightSet> weights,
                       std::unique_ptr<Tokenizer> tokenizer, const std::string& source,
                       std::shared_ptr<const Model>* out);
};

}  // namespace headwise
