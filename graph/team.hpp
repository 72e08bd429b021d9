// The threads of a decode step's parallel parts (graph::run_projections' shares, the
// decode attention's key chunks): run fn(t, n) on n threads, the caller being t = 0.
//
// Why not an OpenMP region: on this project's 2-core VM a `#pragma omp parallel` of 2
// threads costs ~2.7 µs to start and join (libgomp: the pool's dock barrier, the team's
// work share, the end barrier: several cross-core round trips), while a worker spinning
// on one counter that the caller bumps, and a counter of its own the caller waits on,
// takes ~0.2 µs. llama-134m decodes a token in ~2 ms with ~60 such regions.
//
// A team per thread count, shared by the process and started on first use; one caller
// at a time (another caller meanwhile, a call from inside an OpenMP region or for more
// threads than the process has cores runs an OpenMP region instead; in a child of
// fork(), the shares run one after the other). Workers spin for kSpinMicros after their last job, then sleep
// on a condition variable (a new job wakes them): a team idle between requests costs no
// CPU. The same fn(t, n) runs either way: which thread computes what never changes a
// result here (the callers' shares are fixed by t and n).
#pragma once

#include <type_traits>

namespace headwise::graph {

// Calls fn(t, n) for t = 0 .. n − 1 on n threads and returns when all have returned.
// n ≤ 1: fn(0, 1) on the caller.
void parallel_run(int n, void (*fn)(void* ctx, int t, int n), void* ctx);

template <class F>
void parallel_run(int n, F&& fn) {
  using Fn = std::remove_reference_t<F>;
  parallel_run(n, [](void* c, int t, int k) { (*static_cast<Fn*>(c))(t, k); }, const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace headwise::graph
