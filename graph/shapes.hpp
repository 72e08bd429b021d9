// Shape rules, one per op: check a node's inputs and weights against each other and
// the settings, and give the widths of its outputs.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace headwise::graph {

// `n` has its inputs and weights bound; fills n's derived fields (K, N, heads, ...)
// and `widths` (one per output). Errors name `path` and n.where.
Status infer_widths(const Graph& g, const std::string& path, Node* n, std::vector<int>* widths);

}  // namespace headwise::graph
