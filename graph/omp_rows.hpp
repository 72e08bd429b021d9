// f(r) for r in [0, rows): split over `threads` OpenMP threads when `split`, else a plain
// loop on the caller.
//
// Why not `#pragma omp parallel for num_threads(threads) if (split)`: for a false `if`,
// libgomp still starts and ends a team of one (GOMP_parallel with one thread allocates,
// sets up and frees a team). That costs 1.3 µs a call in a tight loop on this project's
// Zen 5 VM, and 3.5-4.9 µs inside a llama-134m Q4_K_M decode step (f16 cache, 2 threads),
// where the work itself took 0.5-1.2 µs: the KV rows' store of every layer (12 such
// regions a step), the embedding row, and on Q4_1/Q5_1/GPTQ weights the block sums and
// input gather of every projection's slice.
#pragma once

namespace headwise::graph {

template <class F>
void for_rows(int rows, int threads, bool split, const F& f) {
  if (!split || threads <= 1 || rows <= 1) {
    for (int r = 0; r < rows; ++r) f(r);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int r = 0; r < rows; ++r) f(r);
}

}  // namespace headwise::graph
