// Projections of one input in one parallel region, each thread a share of their weight
// bytes (see projection.hpp).

#include <algorithm>
#include <chrono>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "graph/projection.hpp"
#include "graph/team.hpp"

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

// A clock for the shares' finishing times: the time-stamp counter where there is one
// (constant rate on the x86 CPUs headwise targets; ~20 cycles), else steady_clock.
inline uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// How a call's measurements move the speeds: each thread's bytes per tick since the
// region began (its start-up included: a thread that starts later must finish less),
// relative to the threads' mean, limited to [1/2, 2] of its current speed (a thread
// preempted once does not lose its share), then a quarter of the way from the old speed.
// At equal finishing times the shares do not move.
void update(ShareBalance* b, int n, const double* bytes, const uint64_t* end, uint64_t start) {
  float sample[ShareBalance::kMaxThreads];
  double mean = 0;
  for (int t = 0; t < n; ++t) {
    if (bytes[t] <= 0 || end[t] <= start) return;  // a thread without work: no signal
    sample[t] = float(bytes[t] / double(end[t] - start));
    mean += sample[t];
  }
  mean /= n;
  double total = 0;
  for (int t = 0; t < n; ++t) {
    const float r = std::clamp(float(sample[t] / mean), 0.5f * b->speed[t], 2.0f * b->speed[t]);
    b->speed[t] = 0.75f * b->speed[t] + 0.25f * r;
    total += b->speed[t];
  }
  for (int t = 0; t < n; ++t) b->speed[t] = float(b->speed[t] * n / total);
}

}  // namespace

size_t projections_scratch_bytes(const Projection* const* ps, int count, int M, int threads) {
  if (threads < 2 || !sliceable(ps, count, M)) return 0;
  return size_t(threads) * per_thread_scratch(ps, count, M);
}

Status run_projections(const Projection* const* ps, int count, const float* x, int64_t ldx, float* const* ys,
                       const int64_t* ldys, int M, int threads, void* scratch, size_t scratch_bytes,
                       ShareBalance* balance) {
  const size_t each = per_thread_scratch(ps, count, M);
  if (threads < 2 || !sliceable(ps, count, M) || size_t(threads) * each > scratch_bytes) {
    for (int i = 0; i < count; ++i) HW_RETURN_IF_ERROR(ps[i]->run(x, ldx, ys[i], ldys[i], M, threads, scratch));
    return Status::Ok();
  }
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += ps[i]->weight_bytes();
  if (balance && threads > ShareBalance::kMaxThreads) balance = nullptr;
  if (balance && balance->threads != threads) {
    balance->threads = threads;
    std::fill(balance->speed, balance->speed + threads, 1.0f);
  }
  // Thread t's share starts at byte total · cut[t] / cut[n] of the weights laid end to end.
  double cut[ShareBalance::kMaxThreads + 1] = {0};
  double done[ShareBalance::kMaxThreads] = {0};
  uint64_t end[ShareBalance::kMaxThreads] = {0};
  if (balance)
    for (int t = 0; t < threads; ++t) cut[t + 1] = cut[t] + balance->speed[t];
  int team = 0;
  const uint64_t start = balance ? ticks() : 0;
  parallel_run(threads, [&](int t, int n) {
    void* mine = static_cast<char*>(scratch) + size_t(t) * each;
    // This thread's bytes [lo, hi): speed-weighted with a balance for this team size,
    // else equal.
    const bool weighted = balance && n == threads;
    auto at_cut = [&](int c) {
      if (c == n) return total;
      return weighted ? std::min(total, size_t(double(total) * cut[c] / cut[n]))
                      : size_t(static_cast<unsigned __int128>(total) * unsigned(c) / unsigned(n));
    };
    const size_t lo = at_cut(t), hi = at_cut(t + 1);
    size_t at = 0;
    double mine_bytes = 0;
    const Projection* prepared = nullptr;  // whose inputs `mine` holds
    for (int i = 0; i < count && at < hi; ++i) {
      const Projection& p = *ps[i];
      const size_t bytes = p.weight_bytes();
      if (at + bytes > lo) {
        const int n0 = boundary(p, std::max(lo, at) - at, bytes);
        const int n1 = boundary(p, std::min(hi, at + bytes) - at, bytes);
        if (n0 < n1) {
          // A share that spans q and k (gate and up, ...) of one kernel and K prepares
          // their inputs once: a decode row's quantization (0.2-0.5 us) fewer. Measured
          // with a per-step A/B (2 threads, f16 cache, 512 + 256 tokens): steps 0.2-0.9%
          // faster on llama-134m Q4_K_M, 0.3-0.5% on Q8_0, 0.4% on llama-1b-like Q4_K_M.
          if (!p.prepares_slices()) {
            p.run_slice(x, ldx, ys[i], ldys[i], M, n0, n1, mine);
            prepared = nullptr;  // run_slice used the scratch
          } else {
            if (!prepared || !p.same_slice_input(*prepared)) {
              p.prepare_slices(x, ldx, M, mine);
              prepared = &p;
            }
            p.run_prepared_slice(x, ldx, ys[i], ldys[i], M, n0, n1, mine);
          }
          mine_bytes += double(bytes) * (n1 - n0) / p.N();
        }
      }
      at += bytes;
    }
    if (weighted) {
      done[t] = mine_bytes;
      end[t] = ticks();
      if (t == 0) team = n;
    }
  });
  if (balance && team == threads) update(balance, threads, done, end, start);
  return Status::Ok();
}

}  // namespace headwise::graph
