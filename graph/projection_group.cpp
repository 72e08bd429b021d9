// Several projections of one input in one parallel region (see projection.hpp).
#include <omp.h>

#include <algorithm>

#include "graph/projection.hpp"

namespace headwise::graph {
namespace {

constexpr int kMaxGroup = 16;  // more projections per group: one run() after the other

bool sliceable(const Projection* const* ps, int count, int M) {
  if (count < 1 || count > kMaxGroup) return false;
  for (int i = 0; i < count; ++i)
    if (!ps[i]->can_slice(M)) return false;
  return true;
}

size_t per_thread_scratch(const Projection* const* ps, int count, int M) {
  size_t most = 0;
  for (int i = 0; i < count; ++i) most = std::max(most, ps[i]->slice_scratch_bytes(M));
  return most;
}

// The output row of projection p at byte `at` of its `bytes` of weights, rounded to
// the nearest slice boundary: the same function ends one thread's share and starts the
// next one's, so the shares tile every projection exactly.
int boundary(const Projection& p, size_t at, size_t bytes) {
  if (at >= bytes) return p.N();
  const int64_t g = p.slice_rows();
  const int64_t row = int64_t((static_cast<unsigned __int128>(at) * unsigned(p.N())) / bytes);
  return int(std::min<int64_t>(p.N(), (row + g / 2) / g * g));
}

}  // namespace

size_t projections_scratch_bytes(const Projection* const* ps, int count, int M, int threads) {
  if (threads < 2 || !sliceable(ps, count, M)) return 0;
  return size_t(threads) * per_thread_scratch(ps, count, M);
}

Status run_projections(const Projection* const* ps, int count, const float* x, int64_t ldx, float* const* ys,
                       const int64_t* ldys, int M, int threads, void* scratch, size_t scratch_bytes) {
  const size_t each = per_thread_scratch(ps, count, M);
  if (threads < 2 || count < 2 || !sliceable(ps, count, M) || size_t(threads) * each > scratch_bytes) {
    for (int i = 0; i < count; ++i) HW_RETURN_IF_ERROR(ps[i]->run(x, ldx, ys[i], ldys[i], M, threads, scratch));
    return Status::Ok();
  }
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += ps[i]->weight_bytes();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    void* mine = static_cast<char*>(scratch) + size_t(t) * each;
    // This thread's bytes [lo, hi) of the projections' weights laid end to end.
    const size_t lo = size_t(static_cast<unsigned __int128>(total) * unsigned(t) / unsigned(n));
    const size_t hi = size_t(static_cast<unsigned __int128>(total) * unsigned(t + 1) / unsigned(n));
    size_t at = 0;
    for (int i = 0; i < count && at < hi; ++i) {
      const size_t bytes = ps[i]->weight_bytes();
      if (at + bytes > lo) {
        const int n0 = boundary(*ps[i], std::max(lo, at) - at, bytes);
        const int n1 = boundary(*ps[i], std::min(hi, at + bytes) - at, bytes);
        if (n0 < n1) ps[i]->run_slice(x, ldx, ys[i], ldys[i], M, n0, n1, mine);
      }
      at += bytes;
    }
  }
  return Status::Ok();
}

}  // namespace headwise::graph
