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

  // Floats per position of K (and of V) in a KV-cache slot. A slot holds K for every
  // position, then V: each is (max_context, kv_width), rows dense, so the K and V
  // projections write into the cache with the row stride of a plain [M][N] output
  // (oneDNN 2.6 falls back to its reference matmul for any other output stride).
  int kv_width() const { return graph.settings.n_kv_heads * graph.settings.head_dim; }
};

Status build_plan(Graph graph, std::unique_ptr<Plan>* out);

}  // namespace headwise::graph
