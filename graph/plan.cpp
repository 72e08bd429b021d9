#include "graph/plan.hpp"

#include "graph/rope_scaling.hpp"

namespace headwise::graph {

Status build_plan(Graph graph, std::unique_ptr<Plan>* out) {
  auto plan = std::make_unique<Plan>();
  plan->graph = std::move(graph);
  const Graph& g = plan->graph;
  plan->linears.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != OpKind::linear && n.op != OpKind::logits) continue;
    // Element (k, col) of the logical K×N weight: [N][K] storage (out_in) has it at
    // col·K + k; [K][N] storage (in_out) at k·N + col.
    const int64_t sk = n.layout == WeightLayout::out_in ? 1 : n.N;
    const int64_t sn = n.layout == WeightLayout::out_in ? n.K : 1;
    std::vector<int> widths = n.split.empty() ? std::vector<int>{n.N} : n.split;
    int col = 0;
    for (int w : widths) {
      std::unique_ptr<kernels::PackedLinear> pl;
      const Status s = kernels::PackedLinear::create(n.w + col * sn, n.K, w, sk, sn,
                                                     n.b ? n.b + col : nullptr, &pl);
      if (!s.ok()) return Status(s.code(), n.where + ": " + s.message());
      plan->packed_weight_bytes += pl->weight_bytes();
      plan->linears[i].push_back(std::move(pl));
      col += w;
    }
  }
  const Settings& s = g.settings;
  plan->rope_cos.resize(size_t(s.max_seq_len) * (s.head_dim / 2));
  plan->rope_sin.resize(plan->rope_cos.size());
  if (s.head_dim >= 2)
    kernels::rope_tables(s.rope_theta, s.head_dim, s.max_seq_len, plan->rope_cos.data(),
                         plan->rope_sin.data());
  if (s.head_dim >= 2 && !s.rope_freq_factors.empty())
    rope_scaled_tables(s, plan->rope_cos.data(), plan->rope_sin.data());
  *out = std::move(plan);
  return Status::Ok();
}

}  // namespace headwise::graph
