// run_projections (graph/projection_group.cpp): several projections of one input as
// output-row slices of one parallel region must give, output for output, exactly what
// each projection's own run() gives (a slice runs the same kernel on the same rows: only
// which thread computes a row changes), for every weight type and ISA, row counts up to
// Plan::kGroupMaxRows, thread counts that put share boundaries inside projections, at
// their edges and past the number of slices, N that are not whole slices, and shares
// weighted by a ShareBalance (any speeds: the rows move between threads, not their
// values). And the plan finds the runs of linear nodes on one input (q, k, v; gate, up).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

#include <strings.h>

#include "graph/plan.hpp"
#include "graph/projection.hpp"
#include "headwise/model.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/quant/quant.hpp"
#include "runtime/synthetic.hpp"
#include "tests/runtime/model_fixtures.hpp"
#include "tests/status_assert.hpp"

namespace headwise::graph {
namespace {

namespace hq = kernels::quant;
using kernels::Isa;

struct alignas(64) Line {
  char b[64];
};

kernels::WeightType weight_type(const char* name) {
  for (int i = 0; i < int(kernels::WeightType::Count); ++i)
    if (strcasecmp(kernels::weight_type_name(kernels::WeightType(i)), name) == 0) return kernels::WeightType(i);
  return kernels::WeightType::Count;
}

// A projection of `type` ("f32" or a catalogue type) with K inputs and N outputs, random
// weights (quantized row by row), a bias when `bias`. Stored rows live in `keep`.
std::unique_ptr<Projection> make(const char* type, int K, int N, bool bias, Isa isa, std::mt19937* g,
                                 std::vector<std::vector<uint8_t>>* keep, std::vector<std::vector<float>>* biases) {
  std::normal_distribution<float> nd(0, 1);
  biases->emplace_back(N);
  for (float& v : biases->back()) v = nd(*g);
  const float* b = bias ? biases->back().data() : nullptr;
  std::unique_ptr<Projection> p;
  Status s;
  if (std::strcmp(type, "f32") == 0) {
    std::vector<float> w(size_t(K) * N);
    for (float& v : w) v = nd(*g);
    s = Projection::create_f32(w.data(), K, N, 1, K, b, isa, &p);
  } else {
    const hq::TypeInfo* ti = nullptr;
    int n;
    const hq::WType* types = hq::all_types(&n);
    for (int i = 0; i < n; ++i)
      if (strcasecmp(hq::type_info(types[i])->name, type) == 0) ti = hq::type_info(types[i]);
    EXPECT_NE(ti, nullptr) << type;
    if (!ti) return nullptr;
    const size_t rb = hq::row_bytes(*ti, K);
    keep->emplace_back(rb * N);
    std::vector<float> row(K);
    for (int r = 0; r < N; ++r) {
      for (float& v : row) v = nd(*g);
      ti->quantize(row.data(), keep->back().data() + r * rb, K);
    }
    s = Projection::create_typed(weight_type(type), keep->back().data(), K, N, b, isa, &p);
  }
  EXPECT_TRUE(s.ok()) << type << ": " << s.message();
  return p;
}

void check_group(const std::vector<const char*>& types, const std::vector<int>& ns, int K, Isa isa) {
  std::mt19937 g(K + int(types.size()) * 17 + ns[0]);
  std::vector<std::vector<uint8_t>> keep;
  std::vector<std::vector<float>> biases;
  std::vector<std::unique_ptr<Projection>> owned;
  std::vector<const Projection*> ps;
  for (size_t i = 0; i < types.size(); ++i) {
    owned.push_back(make(types[i], K, ns[i], i % 2 == 0, isa, &g, &keep, &biases));
    ASSERT_TRUE(owned.back());
    ps.push_back(owned.back().get());
  }
  const int count = int(ps.size());
  std::normal_distribution<float> nd(0, 1);
  for (int M = 1; M <= Plan::kGroupMaxRows; ++M) {
    const int64_t ldx = K + 3;
    std::vector<float> x(size_t(M) * ldx);
    for (float& v : x) v = nd(g);
    // Expected: each projection's own run(), one thread.
    std::vector<std::vector<float>> want(count);
    size_t seq_scratch = 0;
    for (const Projection* p : ps) seq_scratch = std::max(seq_scratch, p->scratch_bytes(M));
    std::vector<Line> scratch1(seq_scratch / 64 + 1);
    for (int i = 0; i < count; ++i) {
      want[i].assign(size_t(M) * (ps[i]->N() + 1), NAN);
      HW_ASSERT_OK(ps[i]->run(x.data(), ldx, want[i].data(), ps[i]->N() + 1, M, 1, scratch1.data()));
    }
    for (int threads : {2, 3, 4, 7, 64}) {
      const size_t need = projections_scratch_bytes(ps.data(), count, M, threads);
      for (const Projection* p : ps) ASSERT_TRUE(p->can_slice(M)) << "M " << M << ", isa " << kernels::isa_name(isa);
      std::vector<Line> scratch(std::max(need, seq_scratch) / 64 + 1);
      // Shares: equal (no balance), weighted by a balance skewed either way (a slow
      // first or last thread), and one a run has moved (then used again).
      ShareBalance fresh, low_first, high_first;
      low_first.threads = high_first.threads = threads;
      for (int t = 0; t < std::min(threads, ShareBalance::kMaxThreads); ++t) {
        low_first.speed[t] = t == 0 ? 0.05f : 1.5f;
        high_first.speed[t] = t == 0 ? 1.9f : 0.1f;
      }
      ShareBalance* balances[] = {nullptr, &low_first, &high_first, &fresh, &fresh};
      for (int mode = 0; mode < 6; ++mode) {
        const bool room = mode < 5;  // 5: too little scratch (when any), one run() after the other
        ShareBalance* balance = room ? balances[mode] : nullptr;
        std::vector<std::vector<float>> got(count);
        std::vector<float*> ys(count);
        std::vector<int64_t> ldys(count);
        for (int i = 0; i < count; ++i) {
          got[i].assign(size_t(M) * (ps[i]->N() + 1), NAN);
          ys[i] = got[i].data();
          ldys[i] = ps[i]->N() + 1;
        }
        HW_ASSERT_OK(run_projections(ps.data(), count, x.data(), ldx, ys.data(), ldys.data(), M, threads,
                                     scratch.data(), room ? std::max(need, seq_scratch) : need / 2, balance));
        if (balance == &fresh && threads <= ShareBalance::kMaxThreads) {  // speeds stay positive, of mean 1
          ASSERT_EQ(balance->threads, threads);
          double sum = 0;
          for (int t = 0; t < threads; ++t) {
            ASSERT_GT(balance->speed[t], 0.0f) << "thread " << t << " of " << threads;
            sum += balance->speed[t];
          }
          ASSERT_NEAR(sum, threads, 1e-3 * threads);
        }
        for (int i = 0; i < count; ++i)
          for (int r = 0; r < M; ++r)
            for (int n = 0; n < ps[i]->N(); ++n) {
              const size_t at = size_t(r) * ldys[i] + n;
              ASSERT_EQ(std::memcmp(&got[i][at], &want[i][at], sizeof(float)), 0)
                  << types[i] << " (projection " << i << " of " << count << ", N " << ps[i]->N() << ") row " << r
                  << " output " << n << ": " << got[i][at] << " vs " << want[i][at] << "; M " << M << ", threads "
                  << threads << ", isa " << kernels::isa_name(isa) << (room ? "" : ", no scratch to split")
                  << ", balance mode " << mode;
            }
      }
    }
  }
}

std::vector<Isa> usable_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar})
    if (kernels::may_use(isa)) out.push_back(isa);
  return out;
}

TEST(RunProjections, SlicesOfEveryTypeMatchEachProjectionsOwnRun) {
  // N: not whole slices (16-row panel pairs, 16- or 64-column f32 blocks), a single
  // slice, and a single row.
  for (Isa isa : usable_isas())
    for (const char* t : {"f32", "bf16", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K"}) {
      check_group({t, t, t}, {72, 40, 8}, 512, isa);
      check_group({t}, {104}, 256, isa);  // one projection alone (o, down, the classifier)
    }
}

TEST(RunProjections, MixedTypesAsInAQ4KMLayer) {
  // Q4_K_M: q, k in Q4_K and v in Q6_K; gate in Q4_K and up in Q6_K on some layers.
  for (Isa isa : usable_isas()) {
    check_group({"q4_K", "q4_K", "q6_K"}, {256, 64, 64}, 256, isa);
    check_group({"q6_K", "q4_K"}, {200, 1}, 768, isa);
    check_group({"f32", "bf16", "q8_0", "q4_0", "q5_K"}, {17, 33, 48, 100, 24}, 256, isa);
  }
}

TEST(RunProjections, OnePrepareServesEverySliceOfOneKernelAndK) {
  // A share's thread prepares its inputs once for the projections of one kernel entry
  // and K (Projection::prepare_slices, then run_prepared_slice per slice): every slice,
  // in any order, of either projection, gives the bits run() gives.
  for (Isa isa : usable_isas())
    for (const char* t : {"f32", "bf16", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K"}) {
      std::mt19937 g(7);
      std::vector<std::vector<uint8_t>> keep;
      std::vector<std::vector<float>> biases;
      const int K = 512;
      std::unique_ptr<Projection> a = make(t, K, 96, true, isa, &g, &keep, &biases);
      std::unique_ptr<Projection> b = make(t, K, 40, false, isa, &g, &keep, &biases);
      std::unique_ptr<Projection> other_k = make(t, 256, 40, false, isa, &g, &keep, &biases);
      ASSERT_TRUE(a && b && other_k);
      ASSERT_TRUE(a->prepares_slices()) << t << " on " << kernels::isa_name(isa) << ": " << a->small_kernel();
      EXPECT_TRUE(a->same_slice_input(*b)) << t;
      EXPECT_FALSE(a->same_slice_input(*other_k)) << t << ": K 512 and 256";
      for (int M : {1, 3, Plan::kGroupMaxRows}) {
        const int64_t ldx = K + 5;
        std::normal_distribution<float> nd(0, 1);
        std::vector<float> x(size_t(M) * ldx);
        for (float& v : x) v = nd(g);
        std::vector<Line> scratch(std::max(a->scratch_bytes(M), a->slice_scratch_bytes(M)) / 64 + 1);
        for (const Projection* p : {a.get(), b.get()}) {
          std::vector<float> want(size_t(M) * p->N(), NAN), got(want.size(), NAN);
          HW_ASSERT_OK(p->run(x.data(), ldx, want.data(), p->N(), M, 1, scratch.data()));
          a->prepare_slices(x.data(), ldx, M, scratch.data());  // a's preparation serves b too
          const int g16 = p->slice_rows();
          std::vector<std::pair<int, int>> slices;  // back to front, of uneven sizes
          for (int n1 = p->N(), step = g16; n1 > 0; step += g16) {
            const int n0 = std::max(0, n1 - step);
            slices.push_back({n0 / g16 * g16, n1});
            n1 = n0 / g16 * g16;
          }
          for (auto [n0, n1] : slices) p->run_prepared_slice(x.data(), ldx, got.data(), p->N(), M, n0, n1, scratch.data());
          ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
              << t << " on " << kernels::isa_name(isa) << ", M " << M << ", N " << p->N();
        }
      }
    }
  // A group of Q4_K, Q4_K on act-order inputs (run_slice alone, which uses the scratch
  // for its own gathered and prepared inputs), Q4_K and Q6_K (another kernel's inputs):
  // the first share runs the first three and part of the last, so it must prepare again
  // after the second and before the fourth.
  std::mt19937 g(11);
  std::vector<std::vector<uint8_t>> keep;
  std::vector<std::vector<float>> biases;
  const int Ns[4] = {48, 16, 48, 200};
  const char* types[4] = {"q4_K", "q4_K", "q4_K", "q6_K"};
  for (Isa isa : usable_isas()) {
    std::unique_ptr<Projection> ps[4];
    for (int i = 0; i < 4; ++i) ps[i] = make(types[i], 256, Ns[i], i == 0, isa, &g, &keep, &biases);
    std::vector<int32_t> perm(256);
    for (int k = 0; k < 256; ++k) perm[k] = (k * 37 + 11) % 256;
    HW_ASSERT_OK(ps[1]->set_input_permutation(perm.data()));
    EXPECT_FALSE(ps[1]->prepares_slices());
    EXPECT_FALSE(ps[2]->same_slice_input(*ps[3])) << "Q4_K and Q6_K";
    const Projection* group[4] = {ps[0].get(), ps[1].get(), ps[2].get(), ps[3].get()};
    const int M = 2;
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> x(size_t(M) * 256);
    for (float& v : x) v = nd(g);
    for (int threads : {2, 3}) {
      std::vector<Line> scratch(projections_scratch_bytes(group, 4, M, threads) / 64 + 1);
      std::vector<std::vector<float>> got(4);
      float* ys[4];
      int64_t ldys[4];
      for (int i = 0; i < 4; ++i) {
        got[i].assign(size_t(M) * Ns[i], NAN);
        ys[i] = got[i].data();
        ldys[i] = Ns[i];
      }
      HW_ASSERT_OK(run_projections(group, 4, x.data(), 256, ys, ldys, M, threads, scratch.data(),
                                   scratch.size() * sizeof(Line)));
      for (int i = 0; i < 4; ++i) {
        std::vector<float> want(size_t(M) * Ns[i], NAN);
        HW_ASSERT_OK(group[i]->run(x.data(), 256, want.data(), Ns[i], M, 1, scratch.data()));
        ASSERT_EQ(std::memcmp(got[i].data(), want.data(), want.size() * sizeof(float)), 0)
            << "projection " << i << ", threads " << threads << ", isa " << kernels::isa_name(isa);
      }
    }
  }
}

TEST(RunProjections, PlanFindsTheRunsOfLinearNodesOnOneInput) {
  const std::shared_ptr<const Model> m = test::tiny();
  const Plan& p = m->plan();
  const Graph& g = p.graph;
  ASSERT_EQ(p.linear_run.size(), g.nodes.size());
  int threes = 0, twos = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int run = p.linear_run[i];
    ASSERT_GE(run, 1);
    if (g.nodes[i].op != OpKind::linear) {
      EXPECT_EQ(run, 1) << g.nodes[i].where;
      continue;
    }
    for (int j = int(i) + 1; j < int(i) + run; ++j) {
      EXPECT_EQ(g.nodes[j].op, OpKind::linear);
      EXPECT_EQ(g.nodes[j].in[0], g.nodes[i].in[0]);
    }
    const size_t next = i + size_t(run);
    if (next < g.nodes.size() && g.nodes[next].op == OpKind::linear) {
      EXPECT_NE(g.nodes[next].in[0], g.nodes[i].in[0]) << "the run from " << g.nodes[i].where << " stops early";
    }
    if (i == 0 || p.linear_run[i - 1] == 1) {  // the first node of a run
      threes += run == 3;
      twos += run == 2;
    }
  }
  // A Llama layer: q, k, v on the attention norm's output; gate and up on the FFN norm's.
  EXPECT_EQ(threes, m->info().n_layers);
  EXPECT_EQ(twos, m->info().n_layers);
}

TEST(RunProjections, SessionScratchLetsEveryStepOfFewRowsSplit) {
  // A session's scratch, sized for steps of up to `rows` rows, lets every run split the
  // decode steps (fewer rows) over its threads. Q8_0 weights: their kernels need scratch
  // for the rounded inputs (f32 ones need none).
  std::shared_ptr<const Model> m;
  std::string types;
  HW_ASSERT_OK(synthetic_model("tiny", 7, "q8_0", &m, &types));
  const Plan& q = m->plan();
  std::cout << "[   INFO   ] tiny as q8_0: " << types << "\n";
  for (int rows : {1, 3, 4, 8, 512})
    for (int threads : {2, 16}) {
      const size_t have = q.linear_scratch_bytes(rows, threads);
      for (size_t i = 0; i < q.graph.nodes.size(); ++i) {
        if (q.linear_run[i] < 2) continue;
        const Projection* group[16];
        const int n = q.linear_group(int(i), group, 16);
        ASSERT_GT(n, 1);
        for (int M = 1; M <= std::min(rows, Plan::kGroupMaxRows); ++M)
          EXPECT_GE(have, projections_scratch_bytes(group, n, M, threads))
              << "session rows " << rows << ", threads " << threads << ", step of " << M << " rows";
      }
    }
}

}  // namespace
}  // namespace headwise::graph
