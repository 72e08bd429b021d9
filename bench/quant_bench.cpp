// quant_bench — the weight-type products (kernels/quant/) per type × ISA:
//   decode: M = 1 input row against a matrix bigger than the caches (K 4096 × N 8192),
//           reported as GB/s of weights streamed (compare with peak_probe's read rate);
//   prefill: M = 128 rows against K 2048 × N 2048 (weights in L2/L3), as GFLOP/s;
//           decode/ and prefill/ time the catalogue's products on rows as stored
//           (quant.inc), prepared inputs given: rows only where it lists one (every
//           type on scalar, F16/BF16 on avx2/avx512);
//   decode_stream: one input row through the projections of llama-1b-like layers (q, o
//           2048×2048; k, v 2048×512; gate, up 2048×8192; down 8192×2048), all of the
//           type, 4 layers (Q4_K: 137 MB, 4× the L3) called in model order, so the weights
//           come from DRAM as in a model's decode, small matrices and per-call thread
//           start included; GB/s of weights streamed (decode_projection's 18.9 MB Q4_K
//           matrix fits in the L3 and measures the kernel, not the memory);
//   decode_stream_small: the same through 12 llama-134m layers (q, k, v, o 768×768; gate,
//           up 768×2048; down 2048×768: 0.3-3 MB each, 84 calls), where the cost of
//           each call's start (threads, prefetch ramp) weighs most;
//   decode_classifier: one row through llama-134m's 768×32000 output matrix, 6 copies in
//           turn (each call reads from DRAM: Q4_K_M's Q6_K one is 20 MB);
//   the three decode_* run each projection as the plan does (graph::run_projections:
//   output-row shares on graph::parallel_run's team, balanced per call site), with
//   OMP_NUM_THREADS threads;
//   decode_cached: one row through one 768×512 matrix called again and again (Q6_K
//           322 KiB, in this host's L2; BF16's 768 KiB in L3), with OMP_NUM_THREADS threads
//           as the plan makes the call: the rate a kernel's arithmetic allows, in GB/s, to
//           set against the read bandwidth (where a decode_* rate sits below both, the
//           kernel is not keeping its reads in flight);
//   prefill_projection: 512 rows through a 2048×2048 graph::Projection where the CPU has
//           AMX, with kernels::set_amx_override off (BF16 and the dequantized integer
//           types on oneDNN's AMX bf16 matmul, F16 widened to fp32 on its f32 one) and
//           on (`_amx`: the AMX panels, kernels/matmul/gemm_bf16_amx.hpp; F16 split
//           into bf16 hi + lo, three products);
//   prefill_gated: a SwiGLU FFN's gate and up (512 rows, 2048 × 8192 each) on the AMX
//           panels, `_apart` (two projections, then the swiglu op) against `_gated` (one
//           gated product, Projection::run_gated: the same numbers);
//   projection, decode_projection: the same shapes through graph::Projection, i.e.
//           what the plan runs (BF16: oneDNN's bf16 matmul on weights packed once;
//           other types: the registry kernel, on the integer types' 8-row panels on
//           x86, activations prepared per call included).
// On a loaded machine read the CPU column with OMP_NUM_THREADS=1 (GFLOP/s uses real time).
// Threads: OpenMP over output rows (OMP_NUM_THREADS, the caller's split).
//   OMP_NUM_THREADS=2 flock /tmp/bench.lock build/bench/quant_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <omp.h>

#include <random>
#include <string>
#include <vector>

#include <strings.h>

#include <cstring>

#include "graph/projection.hpp"
#include "graph/weight_arena.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/elementwise/elementwise.hpp"
#include "kernels/matmul/linear.hpp"
#include "kernels/quant/quant.hpp"

namespace hq = headwise::kernels::quant;
using headwise::kernels::Isa;

namespace {

struct Problem {
  const hq::TypeInfo* ti;
  int64_t K, N;
  int M;
  std::vector<uint8_t> w, xa;
  size_t rb, ab;
  std::vector<float> y;
};

Problem make(hq::WType t, int M, int64_t K, int64_t N) {
  Problem p{hq::type_info(t), K, N, M, {}, {}, 0, 0, {}};
  std::mt19937 g(1);
  std::normal_distribution<float> nd(0, 1);
  p.rb = hq::row_bytes(*p.ti, K);
  p.w.resize(p.rb * N);
  std::vector<float> row(K);
  for (int64_t n = 0; n < N; ++n) {
    // a few distinct rows repeated: quantizing 8192 rows with the K-quant search is slow
    if (n < 16)
      for (float& v : row) v = nd(g);
    if (n < 16) p.ti->quantize(row.data(), p.w.data() + n * p.rb, K);
    else std::copy_n(p.w.data() + (n % 16) * p.rb, p.rb, p.w.data() + n * p.rb);
  }
  p.ab = hq::act_row_bytes(p.ti->act, K);
  p.xa.resize(p.ab * M);
  for (int m = 0; m < M; ++m) {
    for (float& v : row) v = nd(g);
    hq::prepare_activations(p.ti->act, row.data(), p.xa.data() + m * p.ab, K);
  }
  p.y.resize(size_t(M) * N);
  return p;
}

void run(const Problem& p, hq::GemvFn fn, float* y) {
#pragma omp parallel
  {
    const int nt = omp_get_num_threads(), it = omp_get_thread_num();
    const int64_t per = (p.N + nt - 1) / nt, n0 = it * per, n1 = std::min(p.N, n0 + per);
    if (n0 < n1) fn(p.w.data(), p.rb, n0, n1, p.xa.data(), p.ab, p.M, p.K, y, p.N);
  }
}

void bm(benchmark::State& st, hq::WType t, Isa isa, int M, int64_t K, int64_t N) {
  const hq::GemvFn fn = hq::gemv_kernel(t, isa);
  if (fn == nullptr) {
    st.SkipWithError("no kernel for this ISA on this CPU");
    return;
  }
  Problem p = make(t, M, K, N);
  for (auto _ : st) {
    run(p, fn, p.y.data());
    benchmark::DoNotOptimize(p.y.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * K * N, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  st.counters["GB/s"] = benchmark::Counter(double(p.w.size()) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// graph::Projection of the weights of `p` (the plan's path for this type × ISA).
// The registry's weight type of a quant type.
headwise::kernels::WeightType weight_type_of(hq::WType t) {
  for (int i = 0; i < int(headwise::kernels::WeightType::Count); ++i)
    if (strcasecmp(headwise::kernels::weight_type_name(headwise::kernels::WeightType(i)), hq::type_info(t)->name) == 0)
      return headwise::kernels::WeightType(i);
  return headwise::kernels::WeightType::Count;
}

void bm_projection(benchmark::State& st, hq::WType t, Isa isa, int M, int64_t K, int64_t N, int amx) {
  Problem p = make(t, 1, K, N);
  if (amx >= 0) headwise::kernels::set_amx_override(amx != 0);  // read when the projection is made
  std::unique_ptr<headwise::graph::Projection> proj;
  const headwise::Status s =
      headwise::graph::Projection::create_typed(weight_type_of(t), p.w.data(), int(K), int(N), nullptr, isa, &proj);
  if (amx >= 0) headwise::kernels::clear_amx_override();
  if (!s.ok()) {
    st.SkipWithError(s.message().c_str());
    return;
  }
  std::mt19937 g(2);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(size_t(M) * K), y(size_t(M) * N);
  for (float& v : x) v = nd(g);
  void* scratch = std::aligned_alloc(64, (proj->scratch_bytes(M) + 63) / 64 * 64 + 64);
  const int threads = omp_get_max_threads();
  for (auto _ : st) {
    (void)proj->run(x.data(), K, y.data(), N, M, threads, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  std::free(scratch);
  st.SetLabel(proj->implementation(M));
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * K * N, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

// A SwiGLU FFN's gate and up (512 rows, llama-1b-like's 2048 × 8192) on the AMX panels:
// `gated` 0 runs them apart and then the swiglu, as the plan did before it fused them; 1
// as one gated product (Projection::run_gated). Both compute the same numbers.
void bm_gated(benchmark::State& st, hq::WType t, int gated) {
  constexpr int M = 512, K = 2048, N = 8192;
  Problem pg = make(t, 1, K, N), pu = make(t, 1, K, N);
  std::unique_ptr<headwise::graph::Projection> gate, up;
  headwise::Status s = headwise::graph::Projection::create_typed(weight_type_of(t), pg.w.data(), K, N, nullptr, Isa::avx512, &gate);
  if (s.ok()) s = headwise::graph::Projection::create_typed(weight_type_of(t), pu.w.data(), K, N, nullptr, Isa::avx512, &up);
  if (s.ok() && gate->gated_rows(*up, M) != M) s = headwise::Status(headwise::StatusCode::unsupported, "not a gated pair here");
  if (!s.ok()) {
    st.SkipWithError(s.message().c_str());
    return;
  }
  std::mt19937 g(2);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(size_t(M) * K), yg(size_t(M) * N), yu(size_t(M) * N), f(size_t(M) * N);
  for (float& v : x) v = nd(g);
  void* scratch = std::aligned_alloc(64, (gate->scratch_bytes(M) + 63) / 64 * 64 + 64);
  const int threads = omp_get_max_threads();
  const headwise::kernels::ElemKernels& ew = headwise::kernels::elementwise_kernel(Isa::avx512);
  for (auto _ : st) {
    if (gated) {
      (void)gate->run_gated(*up, headwise::kernels::swiglu_rows(ew), x.data(), K, f.data(), N, M, threads, scratch);
    } else {
      (void)gate->run(x.data(), K, yg.data(), N, M, threads, scratch);
      (void)up->run(x.data(), K, yu.data(), N, M, threads, scratch);
      headwise::kernels::swiglu(ew, {yg.data(), N}, {yu.data(), N}, {f.data(), N}, M, N, threads);
    }
    benchmark::DoNotOptimize(f.data());
  }
  std::free(scratch);
  st.SetLabel(gate->implementation(M));
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * 2 * M * K * N, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

struct Shape {
  int K, N;
};
// One layer's projections in model order: q, k, v, o, gate, up, down.
const std::vector<Shape> kLayer1b = {{2048, 2048}, {2048, 512}, {2048, 512}, {2048, 2048},
                                     {2048, 8192}, {2048, 8192}, {8192, 2048}};
const std::vector<Shape> kLayer134m = {{768, 768}, {768, 768}, {768, 768}, {768, 768},
                                       {768, 2048}, {768, 2048}, {2048, 768}};
// llama-134m's output matrix (d 768, vocab 32000), taken 6 times in turn (Q6_K: 121 MB).
const std::vector<Shape> kClassifier = {{768, 32000}};
// One small matrix that stays in the caches between calls (decode_cached).
const std::vector<Shape> kCached = {{768, 512}};

// The projections of `layers` layers of `shapes` (see the header), one row through each
// in model order per iteration.
void bm_stream(benchmark::State& st, hq::WType t, Isa isa, int layers, const std::vector<Shape>& shapes) {
  const headwise::kernels::WeightType wt = weight_type_of(t);
  // As in a model: the stored rows on huge pages (a heap copy is on 4 KiB pages, where
  // one thread streamed llama-134m's BF16 layers at a third of the model's rate: a TLB
  // miss every 4 KiB), and the projections' own copies in a plan's arena, in model order.
  headwise::graph::WeightArena file, arena;
  std::vector<std::unique_ptr<headwise::graph::Projection>> projs;
  size_t bytes = 0, scratch_bytes = 0;
  int maxk = 0, maxn = 0;
  for (int l = 0; l < layers; ++l)
    for (const Shape& sh : shapes) {
      const Problem stored = make(t, 1, sh.K, sh.N);
      void* rows = file.allocate(stored.w.size());
      if (!rows) {
        st.SkipWithError("out of memory for the weights");
        return;
      }
      std::memcpy(rows, stored.w.data(), stored.w.size());
      projs.emplace_back();
      const headwise::Status s = headwise::graph::Projection::create_typed(wt, rows, sh.K, sh.N, nullptr, isa,
                                                                             &projs.back(), &arena);
      if (!s.ok()) {
        st.SkipWithError(s.message().c_str());
        return;
      }
      bytes += projs.back()->weight_bytes();
      scratch_bytes = std::max(scratch_bytes, projs.back()->scratch_bytes(1));
      maxk = std::max(maxk, sh.K);
      maxn = std::max(maxn, sh.N);
    }
  std::mt19937 g(2);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(maxk), y(maxn);
  for (float& v : x) v = nd(g);
  const int threads = omp_get_max_threads();
  for (const auto& p : projs) {
    const headwise::graph::Projection* pp = p.get();
    scratch_bytes = std::max(scratch_bytes, headwise::graph::projections_scratch_bytes(&pp, 1, 1, threads));
  }
  void* scratch = std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64 + 64);
  std::vector<headwise::graph::ShareBalance> balance(projs.size());  // one per node, as a plan has
  for (auto _ : st) {
    for (size_t i = 0; i < projs.size(); ++i) {
      const headwise::graph::Projection* p = projs[i].get();
      float* yp = y.data();
      const int64_t ldy = p->N();
      (void)headwise::graph::run_projections(&p, 1, x.data(), p->K(), &yp, &ldy, 1, threads, scratch, scratch_bytes,
                                             &balance[i]);
    }
    benchmark::DoNotOptimize(y.data());
  }
  std::free(scratch);
  st.SetLabel(projs.front()->implementation(1) + ", " + std::to_string(projs.size()) + " projections, " +
              std::to_string(bytes >> 20) + " MiB");
  st.counters["GB/s"] = benchmark::Counter(double(bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

const int kRegistered = [] {
  int n;
  const hq::WType* types = hq::all_types(&n);
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar}) {
    if (!headwise::kernels::may_use(isa)) continue;
    for (int i = 0; i < n; ++i) {
      const std::string name = std::string(hq::type_info(types[i])->name) + "/" + headwise::kernels::isa_name(isa);
      if (hq::gemv_kernel(types[i], isa)) {
        benchmark::RegisterBenchmark(("decode/" + name).c_str(), bm, types[i], isa, 1, 4096, 8192)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
        if (isa != Isa::scalar)
          benchmark::RegisterBenchmark(("prefill/" + name).c_str(), bm, types[i], isa, 128, 2048, 2048)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
      }
      if (isa != Isa::scalar) {
        benchmark::RegisterBenchmark(("projection/" + name).c_str(), bm_projection, types[i], isa, 128, 2048, 2048, -1)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("decode_projection/" + name).c_str(), bm_projection, types[i], isa, 1, 4096, 8192, -1)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
        if (isa == Isa::avx512 && headwise::kernels::amx_detected())  // oneDNN, then the AMX panels
          for (int amx : {0, 1})
            benchmark::RegisterBenchmark(("prefill_projection/" + name + (amx ? "_amx" : "")).c_str(), bm_projection,
                                         types[i], isa, 512, 2048, 2048, amx)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
        if (isa == Isa::avx512 && headwise::kernels::amx_detected())  // apart, then gated
          for (int gated : {0, 1})
            benchmark::RegisterBenchmark(("prefill_gated/" + name + (gated ? "_gated" : "_apart")).c_str(), bm_gated,
                                         types[i], gated)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
        if (hq::type_info(types[i])->block >= 32 || isa == Isa::avx512)  // the 16-bit types (2x the bytes): avx512 only
          benchmark::RegisterBenchmark(("decode_stream/" + name).c_str(), bm_stream, types[i], isa, 4, kLayer1b)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("decode_stream_small/" + name).c_str(), bm_stream, types[i], isa, 12,
                                     kLayer134m)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("decode_classifier/" + name).c_str(), bm_stream, types[i], isa, 6, kClassifier)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("decode_cached/" + name).c_str(), bm_stream, types[i], isa, 1, kCached)
            ->Unit(benchmark::kMicrosecond)->UseRealTime();
      }
    }
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
