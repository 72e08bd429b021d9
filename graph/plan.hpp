// The executable plan: a checked graph plus every decision derived from it once, at
// load, so that running a step is a plain loop over the nodes:
//   - the ISA: kernels::active_isa() when the plan is built (detected once, capped by
//     HEADWISE_ISA or set_isa_override; an unusable HEADWISE_ISA fails the build). Every
//     kernel below is selected from its op's list for this ISA, here and only here
//     (kernels/registry.hpp); the executor calls through these pointers, so a later
//     change of the override affects plans built afterwards, never a running one,
//   - per linear/logits node: its Projections (weights packed, the registry kernel for
//     few rows, oneDNN primitives for a fixed set of row classes),
//   - the element-wise table (elementwise.inc) and the KV-cache converters
//     (kv_convert.inc),
//   - the attention kernels and their tiles (kernels/attention/attention.inc),
//   - RoPE tables, the activation memory plan (graph.arena_cols), KV-cache geometry,
//   - the thread policy (below).
// Immutable after creation and shared by every session of the model.
//
// Thread policy: a step runs on the session's `threads` OpenMP threads, where 0 means
// omp_get_max_threads() of the calling thread (all cores unless the application or
// OMP_NUM_THREADS says otherwise), resolved once per step; inside an OpenMP parallel
// region a step runs on the calling thread only. Nothing changes the caller's OpenMP
// settings (oneDNN's setting is scoped to each GEMM, see projection.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "graph/projection.hpp"
#include "graph/weight_arena.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/convert/kv_convert.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/elementwise/elementwise.hpp"

namespace headwise::graph {

struct Plan {
  Graph graph;
  kernels::Isa isa = kernels::Isa::scalar;
  const kernels::ElemKernels* elementwise = nullptr;  // norms, activations, adds, RoPE
  const kernels::KvConvert* kv_convert = nullptr;     // rows into / out of a 16-bit cache
  const kernels::AttnKernel* attn = nullptr;  // the attention kernel of `isa` (f32 K/V)
  // The attention kernels of `isa` for each KV-cache element type, indexed by KvType (a
  // session's cache type picks one; attn is attn_kv[f32]).
  const kernels::AttnKernel* attn_kv[3] = {};
  const kernels::AttnKernel& attn_for(KvType t) const { return *attn_kv[static_cast<int>(t)]; }
  // For linear/logits node i: one projection per output (a multi-output linear is split
  // into one GEMM per output, so each writes straight to its destination, e.g. the KV
  // cache). Empty for other nodes.
  // The projections' own weight copies (declared first: destroyed after them).
  std::unique_ptr<WeightArena> weight_arena;
  std::vector<std::vector<std::unique_ptr<Projection>>> linears;
  // For linear node i: how many linear nodes from i on read the same input (a layer's
  // q, k, v: 3; gate, up: 2; else 1). In a decode step the executor runs their
  // projections together (run_projections: the threads start and meet once).
  std::vector<int> linear_run;
  static constexpr int kGroupMaxRows = 4;  // steps of up to this many rows run such groups
  // For node i: 1 when nodes i, i + 1 and i + 2 are a SwiGLU FFN's gate and up (one
  // output each, one input) and the swiglu of their two outputs, which nothing else reads
  // and which share their storage group with it (so it is written nowhere the input is
  // read). A step whose rows both projections run on AMX panels (Projection::gated_rows)
  // then computes the swiglu's rows in one gated product, the gate and up rows never
  // stored; its results are the three nodes' own, bit for bit.
  std::vector<char> gated;
  std::vector<float> rope_cos, rope_sin;  // (max_seq_len, head_dim/2)
  size_t packed_weight_bytes = 0;

  // Elements per position of K (and of V) in a KV-cache slot: kv_heads · head_dim. The
  // slot layouts (fp32 position-major, 16-bit in tiles) are SessionBuffers::kv_view's.
  int kv_width() const { return graph.settings.n_kv_heads * graph.settings.head_dim; }

  // Scratch any projection, or group of them (linear_run) on `threads` threads, needs
  // for a step of up to `rows` rows (the session owns it).
  size_t linear_scratch_bytes(int rows, int threads = 1) const;
  // The projections of linear nodes [i, i + linear_run[i]) in order; 0 when more than `room`.
  int linear_group(int i, const Projection** out, int room) const;

  // The plan, one line per node (kernel, tiles, row classes), for a session stepping
  // `rows` rows at a time on `threads` threads: what `headwise run --verbose` prints.
  std::string describe(int rows, int threads) const;
};

// Tests and benchmarks: 0 builds plans without gated FFN products (Plan::gated all 0),
// anything else with them (the default).
void set_gated_ffn_override(int v);

// Resolves a thread count by the plan's thread policy (see above).
int resolve_threads(int threads);

// Builds the plan on the active ISA (kernels::active_isa(), read once here). Fails when
// HEADWISE_ISA cannot be honoured, naming the value and what the CPU supports.
Status build_plan(Graph graph, std::unique_ptr<Plan>* out);

}  // namespace headwise::graph
