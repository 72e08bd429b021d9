// The executable plan: a checked graph plus everything derived from it once, at load —
// weights reordered for oneDNN, RoPE tables, the activation memory plan. Immutable
// after creation and shared by every session of the model.
#pragma once

#include <memory>
#include <vector>

#include "graph/graph.hpp"
#include "kernels/matmul/linear.hpp"

namespace headwise::graph {

struct Plan {
  Graph graph;
  // For linear/logits node i: one packed weight per output (a multi-output linear is
  // split into one GEMM per output, so each writes straight to its destination, e.g. the
  // KV cache). Empty for other nodes.
  std::vector<std::vector<std::unique_ptr<kernels::PackedLinear>>> linears;
  std::vector<float> rope_cos, rope_sin;  // (max_seq_len, head_dim/2)
  size_t packed_weight_bytes = 0;

  int kv_width() const { return graph.settings.n_kv_heads * graph.settings.head_dim; }
  // floats per position per KV slot: K then V
  int kv_row() const { return 2 * kv_width(); }
};

Status build_plan(Graph graph, std::unique_ptr<Plan>* out);

}  // namespace headwise::graph
