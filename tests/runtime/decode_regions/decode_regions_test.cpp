// A decode step starts no OpenMP region, not even a team of one.
//
// Its parallel parts run on graph::parallel_run's spinning team (graph/team.hpp) and its
// serial parts on the caller. An `#pragma omp parallel for if (split)` whose split is off
// still starts and ends a libgomp team of one: 3.5-4.9 µs each inside a llama-134m Q4_K_M
// step. Before graph::for_rows (graph/omp_rows.hpp) the KV rows' store started one per
// layer and the embedding one per step, and steps were 2.3-4.0% slower, measured by
// alternating the two forms step by step in one run. Nothing in a step's results shows
// this, so it is counted here: libgomp enters every parallel region through
// GOMP_parallel, which this binary wraps (its own definition comes first in the symbol
// lookup, in front of the library's calls), counting and forwarding to libgomp's.
//
// A binary of its own, so that no other test runs with the wrapper.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "headwise/model.hpp"
#include "runtime/synthetic.hpp"

namespace {
std::atomic<long> g_regions{0};
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
}  // namespace

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
  static const auto real = reinterpret_cast<GompParallel>(dlsym(RTLD_NEXT, "GOMP_parallel"));
  g_regions.fetch_add(1, std::memory_order_relaxed);
  real(fn, data, num_threads, flags);
}

namespace headwise {
namespace {

// Regions a prefill of 24 tokens starts (it must start some: the wrapper works) and
// regions 8 decode steps start after it, on `threads` threads.
struct Counts {
  long prefill = -1, decode = -1;
};
Counts count_regions(const std::shared_ptr<const Model>& m, KvType kv, int threads) {
  SessionOptions o;
  o.threads = threads;
  o.kv_type = kv;
  std::unique_ptr<Session> s;
  const Status st = m->open_session(o, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return {};
  std::vector<int32_t> prompt(24);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(1 + 7 * i % 50);
  Counts c;
  const long before = g_regions.load();
  EXPECT_TRUE(s->prefill(prompt).ok());
  c.prefill = g_regions.load() - before;
  const long mid = g_regions.load();
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(s->decode(int32_t(3 + i)).ok());
  c.decode = g_regions.load() - mid;
  return c;
}

TEST(DecodeRegions, ADecodeStepStartsNoOpenMpRegion) {
  // Two threads where the machine has two cores (more threads than cores run OpenMP
  // regions by design: graph/team.hpp); one thread otherwise, which must start none either.
  const int threads = std::min(2, omp_get_num_procs());
  // f32 weights (the GEMV), a block type with a stored-type embedding (q8_0: the
  // embedding row converted per step), and each KV cache type (the 16-bit ones store
  // their rows per layer).
  for (const char* mix : {"", "q8_0"}) {
    std::shared_ptr<const Model> m;
    std::string types;
    const Status st = synthetic_model("llama-134m", 3, mix, &m, &types);
    ASSERT_TRUE(st.ok()) << st.message();
    for (KvType kv : {KvType::f32, KvType::f16, KvType::bf16}) {
      const Counts c = count_regions(m, kv, threads);
      const std::string what = std::string("weights ") + (*mix ? mix : "f32") + " (" +
                               (types.empty() ? "f32" : types) + "), kv " + kv_type_name(kv) + ", " +
                               std::to_string(threads) + " thread(s)";
      if (threads > 1) {
        EXPECT_GT(c.prefill, 0) << what << ": a 24-row prefill starts OpenMP regions (the wrapper counts)";
      }
      EXPECT_EQ(c.decode, 0) << what << ": OpenMP regions started by 8 decode steps";
    }
  }
}

}  // namespace
}  // namespace headwise
