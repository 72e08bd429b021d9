#include "graph/plan.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <sstream>

#include "graph/memory.hpp"
#include "graph/rope_scaling.hpp"
#include "kernels/elementwise/elementwise.hpp"

namespace headwise::graph {
namespace {
std::atomic<int> gated_ffn_override{1};  // set_gated_ffn_override
}  // namespace

void set_gated_ffn_override(int v) { gated_ffn_override.store(v != 0); }

int resolve_threads(int threads) {
  if (omp_in_parallel()) return 1;  // never nest parallel regions
  return threads > 0 ? threads : omp_get_max_threads();
}

size_t Plan::linear_scratch_bytes(int rows, int threads) const {
  size_t most = 0;
  for (const auto& outs : linears)
    for (const auto& p : outs) most = std::max(most, p->scratch_bytes(rows));
  // A session sized for `rows` also runs steps of fewer (decode): those of up to
  // kGroupMaxRows run each run of linear nodes, or lone one (the classifier too), as
  // shares (run_projections).
  if (threads > 1)
    for (size_t i = 0; i < linear_run.size(); ++i)
      if (!linears[i].empty()) {
        const Projection* group[16];
        const int n = linear_group(int(i), group, 16);
        if (n > 0) most = std::max(most, projections_scratch_bytes(group, n, std::min(rows, kGroupMaxRows), threads));
      }
  return most;
}

int Plan::linear_group(int i, const Projection** out, int room) const {
  int n = 0;
  for (int j = i; j < i + linear_run[i]; ++j)
    for (const auto& p : linears[j]) {
      if (n == room) return 0;  // too many: the caller runs the nodes one by one
      out[n++] = p.get();
    }
  return n;
}

std::string Plan::describe(int rows, int threads) const {
  std::ostringstream o;
  const int nt = resolve_threads(threads);
  o << "plan: isa " << kernels::isa_name(isa) << ", " << graph.nodes.size() << " nodes, "
    << nt << " thread(s) per step (threads " << threads << "), steps of up to " << rows
    << " row(s), row classes " << Projection::kMinClassRows << ".." << Projection::kMaxClassRows
    << " (powers of two) for oneDNN\n";
  o << "  element-wise table " << elementwise->name << ", KV-cache converters " << kv_convert->name
    << "\n";
  o << "  attention kernel " << attn->name << " (q_tile " << attn->q_tile << ", kv_tile "
    << attn->kv_tile << "), decode path when q_len·4 <= q_tile; 16-bit KV caches: "
    << attn_kv[1]->name << ", " << attn_kv[2]->name
    << (attn_kv[1]->pack ? " (their prefill packs K/V once for all query tiles)" : "") << "\n";
  o << "  scratch per session: projections " << linear_scratch_bytes(rows, nt) << " B for " << rows
    << " rows, 1 row " << linear_scratch_bytes(1, nt) << " B\n";
  int runs = 0, members = 0;
  for (size_t i = 0; i < linear_run.size(); i += std::max(1, linear_run[i]))
    if (linear_run[i] > 1) ++runs, members += linear_run[i];
  if (runs)
    o << "  steps of up to " << kGroupMaxRows << " rows: " << runs << " runs of linear nodes on one input ("
      << members << " nodes) each run in one parallel region (graph::run_projections)\n";
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    o << "  [" << i << "] " << op_name(n.op) << "  " << n.where;
    switch (n.op) {
      case OpKind::linear:
      case OpKind::logits:
        o << "  K " << n.K << " N " << n.N;
        for (const auto& p : linears[i])
          o << "\n        " << p->N() << " out, " << kernels::weight_type_name(p->type()) << ": "
            << rows << " rows → " << p->implementation(rows) << "; 1 row → " << p->implementation(1);
        if (i < gated.size() && gated[i]) {
          const int g = linears[i][0]->gated_rows(*linears[i + 1][0], rows);
          if (g > 0)
            o << "\n        with [" << i + 1 << "] and [" << i + 2 << "]: " << g
              << " rows → one gated product, the swiglu formed from each block's tiles (gate and up never stored)";
        }
        break;
      case OpKind::attention: {
        kernels::AttnProblem p;
        p.q_len = rows;
        p.kv_len = rows;
        p.q_heads = n.heads;
        p.kv_heads = n.kv_heads;
        p.head_dim = n.head_dim;
        p.causal = n.causal;
        const kernels::AttnPlan pre = kernels::plan_attention(*attn, p, nt);
        p.q_len = 1;
        const kernels::AttnPlan dec = kernels::plan_attention(*attn, p, nt);
        o << "  heads " << n.heads << "/" << n.kv_heads << " d " << n.head_dim
          << (n.causal ? " causal" : "") << "; prefill of " << rows << ": "
          << (pre.path == kernels::AttnPath::decode ? "split-KV" : "query tiles") << " on "
          << pre.threads << " thread(s), scratch " << pre.workspace_floats() * 4
          << " B; decode at " << rows << " keys: " << dec.kv_chunks << " key chunk(s) on "
          << dec.threads << " thread(s)";
        o << ", keys ahead asked for into " << (dec.ahead == kernels::AttnAhead::l2 ? "L2" : "L1");
        break;
      }
      default:
        break;
    }
    o << "\n";
  }
  return o.str();
}

namespace {
// The linear registry's weight type for a stored DType (weight_types.inc).
kernels::WeightType weight_type_of(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return kernels::WeightType::f32;
    case DType::f16: return kernels::WeightType::f16;
    case DType::bf16: return kernels::WeightType::bf16;
    case DType::q8_0: return kernels::WeightType::q8_0;
    case DType::q4_0: return kernels::WeightType::q4_0;
    case DType::q4_k: return kernels::WeightType::q4_k;
    case DType::q5_k: return kernels::WeightType::q5_k;
    case DType::q6_k: return kernels::WeightType::q6_k;
    case DType::q3_k: return kernels::WeightType::q3_k;
    case DType::iq4_xs: return kernels::WeightType::iq4_xs;
    case DType::q2_k: return kernels::WeightType::q2_k;
    case DType::q4_1: case DType::q5_1: case DType::q4_0c: case DType::q8_0c:
      break;  // no kernels of their own: Projection::create_offset_blocks
  }
  return kernels::WeightType::f32;
}
}  // namespace

Status build_plan(Graph graph, std::unique_ptr<Plan>* out) {
  if (!kernels::isa_env_error().empty()) return unsupported(kernels::isa_env_error());
  if (!kernels::amx_env_error().empty()) return unsupported(kernels::amx_env_error());
  auto plan = std::make_unique<Plan>();
  plan->graph = std::move(graph);
  plan->isa = kernels::active_isa();
  plan->elementwise = &kernels::elementwise_kernel(plan->isa);
  plan->kv_convert = &kernels::kv_convert(plan->isa);
  for (KvType t : {KvType::f32, KvType::f16, KvType::bf16})
    plan->attn_kv[static_cast<int>(t)] = &kernels::attn_kernel(plan->isa, t);
  plan->attn = plan->attn_kv[static_cast<int>(KvType::f32)];
  const Graph& g = plan->graph;
  plan->weight_arena = std::make_unique<WeightArena>();
  plan->linears.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    // Every loader's graph passes here: the kernels' head_dim limit is checked once.
    if (n.op == OpKind::attention && (n.head_dim < 1 || n.head_dim > kernels::kMaxHeadDim))
      return unsupported(n.where + ": head_dim " + std::to_string(n.head_dim) + " is outside the supported 1.." +
                         std::to_string(kernels::kMaxHeadDim) + " (kernels/attention/attention.hpp says why)");
    if (n.op != OpKind::linear && n.op != OpKind::logits) continue;
    // Element (k, col) of the logical K×N weight: [N][K] storage (out_in) has it at
    // col·K + k; [K][N] storage (in_out) at k·N + col.
    const int64_t sk = n.layout == WeightLayout::out_in ? 1 : n.N;
    const int64_t sn = n.layout == WeightLayout::out_in ? n.K : 1;
    std::vector<int> widths = n.split.empty() ? std::vector<int>{n.N} : n.split;
    int col = 0;
    for (int w : widths) {
      std::unique_ptr<Projection> p;
      Status s;
      if (n.wq && dtype_has_offsets(n.wq_type)) {  // as Q8_0 (Q4_0C: Q4_0) + offsets
        const size_t rb = dtype_row_bytes(n.wq_type, n.K);
        s = n.K % kernels::quant::kLoadOnlyBlock != 0
                ? Status(StatusCode::unsupported, "rows of " + std::to_string(n.K) + " " + dtype_name(n.wq_type) +
                                                      " weights are not whole blocks")
                : Projection::create_offset_blocks(dtype_quant_type(n.wq_type),
                                                   static_cast<const uint8_t*>(n.wq) + size_t(col) * rb, n.K, w,
                                                   n.b ? n.b + col : nullptr, plan->isa, &p, plan->weight_arena.get());
      } else if (n.wq) {  // weights in their stored type: rows [col, col + w) of [N][K]
        const kernels::WeightType wt = weight_type_of(n.wq_type);
        const size_t rb = size_t(n.K / kernels::weight_block_elems(wt)) * kernels::weight_block_bytes(wt);
        s = n.K % kernels::weight_block_elems(wt) != 0
                ? Status(StatusCode::unsupported, "rows of " + std::to_string(n.K) + " " + dtype_name(n.wq_type) +
                                                      " weights are not whole blocks")
                : Projection::create_typed(wt, static_cast<const uint8_t*>(n.wq) + size_t(col) * rb, n.K, w,
                                           n.b ? n.b + col : nullptr, plan->isa, &p, plan->weight_arena.get());
      } else {
        s = Projection::create_f32(n.w + col * sn, n.K, w, sk, sn, n.b ? n.b + col : nullptr, plan->isa, &p,
                                   plan->weight_arena.get());
      }
      if (s.ok() && n.wq && n.wq_perm) s = p->set_input_permutation(n.wq_perm);  // GPTQ act-order
      if (!s.ok()) return Status(s.code(), n.where + ": " + s.message());
      plan->packed_weight_bytes += p->weight_bytes();
      plan->linears[i].push_back(std::move(p));
      col += w;
    }
  }
  // Runs of linear nodes reading one input (nothing between them: each reads the input
  // alone, and none reads another's output, which is a value of its own).
  plan->linear_run.assign(g.nodes.size(), 1);
  for (int i = int(g.nodes.size()) - 2; i >= 0; --i) {
    const Node &a = g.nodes[i], &b = g.nodes[i + 1];
    if (a.op == OpKind::linear && b.op == OpKind::linear && a.in[0] == b.in[0])
      plan->linear_run[i] = plan->linear_run[i + 1] + 1;
  }
  plan->gated.assign(g.nodes.size(), 0);
  if (gated_ffn_override.load())
    for (size_t i = 0; i + 2 < g.nodes.size(); ++i) {
      const Node &a = g.nodes[i], &b = g.nodes[i + 1], &c = g.nodes[i + 2];
      if (a.op != OpKind::linear || b.op != OpKind::linear || c.op != OpKind::swiglu || a.in[0] != b.in[0] ||
          a.out.size() != 1 || b.out.size() != 1 || c.in[0] != a.out[0] || c.in[1] != b.out[0])
        continue;
      const Value &gv = g.values[a.out[0]], &uv = g.values[b.out[0]], &fv = g.values[c.out[0]];
      if (gv.last_use == int(i) + 2 && uv.last_use == int(i) + 2 && (fv.group == gv.group || fv.group == uv.group) &&
          plan->linears[i].size() == 1 && plan->linears[i + 1].size() == 1)
        plan->gated[i] = 1;
    }
  const Settings& s = g.settings;
  // Hostile input (issue 12): the tables are sized by max_seq_len from the model file.
  const uint64_t rope_bytes = 2 * uint64_t(s.max_seq_len) * uint64_t(s.head_dim / 2) * sizeof(float);
  if (rope_bytes > available_memory_bytes())
    return out_of_memory("the RoPE tables for max_seq_len " + std::to_string(s.max_seq_len) + " positions need " +
                         mib_str(rope_bytes) + ", more than the " + mib_str(available_memory_bytes()) +
                         " of memory available");
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
