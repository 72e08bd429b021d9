// Running the plan over one step: the rows of one prompt chunk of one session, or one
// token of each of several sessions (batched decode). A plain loop over the plan's
// nodes, one switch on the op (no default: the compiler lists any op the executor
// forgot), calling the kernels the plan chose with session-owned memory. Nothing is
// decided here that the plan already decided.
#pragma once

#include <vector>

#include "graph/plan.hpp"
#include "headwise/model.hpp"
#include "runtime/session_buffers.hpp"

namespace headwise {

struct StepSeq {
  Session* session;
  SessionBuffers* buf;
  int row0 = 0, rows = 0, pos0 = 0;
};

struct Step {
  int M = 0;                   // rows in the step
  const int32_t* tokens = nullptr;  // (M,)
  const int32_t* pos = nullptr;     // (M,) position of each row
  std::vector<StepSeq> seqs;
  float* arena = nullptr;      // plan.graph.arena_cols · M floats
  float* logits = nullptr;     // (logit rows, vocab)
  bool all_logits = false;     // logits for every row (else: the last row of each sequence)
  int threads = 0;              // the session's setting (see graph::resolve_threads)
  void* scratch = nullptr;      // plan.linear_scratch_bytes(M, threads) bytes, 64-byte aligned
  size_t scratch_bytes = 0;     // its size (groups of projections run one by one in less)
  graph::ShareBalance* balance = nullptr;  // (plan nodes,): run_projections' shares; null: equal
  // profiling (null: off)
  std::vector<OpTiming>* timings = nullptr;
  std::vector<TraceEvent>* trace = nullptr;
  const AttentionHook* hook = nullptr;
};

Status execute(const graph::Plan& plan, const Step& step);

// Fills `t` with one entry per node of the plan (names, zero counts).
void init_timings(const graph::Plan& plan, std::vector<OpTiming>* t);

}  // namespace headwise
