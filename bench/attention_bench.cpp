// attention_bench — headwise::attention() on the five shapes and four GQA decode
// shapes (f16, bf16 and fp32 caches) and three prefills over a 16-bit cache, once per ISA
// this CPU has (the latter also "avx512_amx" where the CPU has AMX, and
// "avx512_amx_unpacked": the amx lines with K and V converted per query tile, not packed
// once per call), at the thread count of HEADWISE_THREADS (default:
// omp_get_max_threads()).
//
// Counters (rates use wall time: UseRealTime):
//   flops     achieved FLOP/s (printed as e.g. "512G/s" = 512 GFLOP/s)
//   pct_peak  flops as a percentage of this machine's fp32 FMA peak for that ISA at that
//             thread count, measured once at startup with headwise::measure_peak
//   kv_read   decode only: K/V bytes read per second (GB/s), at the shape's cache type
//   pct_bw    decode only: kv_read as a percentage of the measured read bandwidth
// FLOPs: causal prefill 2·B·Hq·Dh·T·(T+1); non-causal 4·B·Hq·Dh·Tq·Tk;
//        one decode token 4·B·Hq·Dh·Tk.  K/V bytes: 2·B·Tk·Hkv·Dh·(4 or 2).
//
// Median of repeats: attention_bench --benchmark_repetitions=10
//                                    --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "headwise/attention.hpp"
#include "bench/probe/peak.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/simd/half.hpp"
#include "tools/random_tensor.hpp"

namespace {

using headwise::kernels::Isa;

struct Shape {
  const char* id;
  int batch, q_len, kv_len, q_heads, kv_heads, head_dim;
  bool causal;
  headwise::KvType kv_type = headwise::KvType::f32;

  bool decode() const { return q_len == 1; }
  double flops() const {
    return headwise::kernels::attention_flops(batch, q_heads, head_dim, q_len, kv_len, causal);
  }
  double kv_bytes() const {
    return 2.0 * batch * kv_len * kv_heads * head_dim * headwise::kv_type_bytes(kv_type);
  }
  std::string name() const {
    return std::string(id) + "_b" + std::to_string(batch) + "_q" + std::to_string(q_len) +
           "_k" + std::to_string(kv_len) + "_h" + std::to_string(q_heads) + "_kv" +
           std::to_string(kv_heads) + "_d" + std::to_string(head_dim) +
           (causal ? "_causal" : "_full") +
           (kv_type == headwise::KvType::f32 ? "" : std::string("_") + headwise::kv_type_name(kv_type));
  }
};

// The shapes. S4 is one decode step: one query token on a 2048-key cache.
const Shape kShapes[] = {
    {"S1", 1, 1024, 1024, 12, 12, 64, true},
    {"S2", 1, 2048, 2048, 32, 32, 128, true},
    {"S3", 8, 256, 256, 12, 12, 64, true},
    {"S4", 1, 1, 2048, 32, 32, 128, true},
    {"S5", 1, 2048, 2048, 32, 8, 128, true},
    // Decode with grouped-query attention over a cache of each type: llama-1b-like's
    // layer (32 query heads over 8 KV heads, head_dim 64) at depth 512 and 2048.
    {"G1", 1, 1, 512, 32, 8, 64, true, headwise::KvType::f16},
    {"G2", 1, 1, 2048, 32, 8, 64, true, headwise::KvType::f16},
    {"G3", 1, 1, 2048, 32, 8, 64, true, headwise::KvType::bf16},
    {"G4", 1, 1, 2048, 32, 8, 64, true, headwise::KvType::f32},
    // Prefill over a 16-bit cache (the amx lines' case): llama-134m's layer (12 × 64) and
    // llama-1b-like's (32 over 8 × 64) at 2048 tokens, and llama-134m's at 512.
    {"P1", 1, 2048, 2048, 12, 12, 64, true, headwise::KvType::f16},
    {"P2", 1, 2048, 2048, 32, 8, 64, true, headwise::KvType::bf16},
    {"P3", 1, 512, 512, 12, 12, 64, true, headwise::KvType::f16},
};

using headwise::tools::random_tensor;
using Buffer = headwise::tools::TensorBuffer;

// All OpenMP threads fill it, so its pages sit near the threads that use them.
Buffer random_buffer(size_t n, uint64_t seed) {
  Buffer b = random_tensor(n, seed, omp_get_max_threads());
  if (!b) {
    std::fprintf(stderr, "attention_bench: cannot allocate %zu floats\n", n);
    std::exit(1);
  }
  return b;
}

// Densely packed Q, K, V, O of one shape. Benchmarks of one shape run back to back
// (one per ISA), so only the current shape's tensors are kept.
struct Tensors {
  const Shape* shape = nullptr;
  Buffer q, k, v, o;
  std::vector<uint16_t> k16, v16;  // K and V rounded to the shape's 16-bit cache type
  const void* kd() const { return k16.empty() ? static_cast<const void*>(k.get()) : k16.data(); }
  const void* vd() const { return v16.empty() ? static_cast<const void*>(v.get()) : v16.data(); }
};

std::vector<uint16_t> rounded(const float* x, size_t n, headwise::KvType t) {
  std::vector<uint16_t> h(n);
  for (size_t i = 0; i < n; ++i)
    h[i] = t == headwise::KvType::f16 ? headwise::kernels::f32_to_f16(x[i])
                                      : headwise::kernels::f32_to_bf16(x[i]);
  return h;
}

Tensors& tensors_for(const Shape& s) {
  static Tensors t;
  if (t.shape != &s) {
    t = Tensors{};  // free the previous shape first: the largest needs 128 MiB
    const size_t qo = size_t(s.batch) * s.q_len * s.q_heads * s.head_dim;
    const size_t kv = size_t(s.batch) * s.kv_len * s.kv_heads * s.head_dim;
    t.q = random_buffer(qo, 1);
    t.k = random_buffer(kv, 2);
    t.v = random_buffer(kv, 3);
    t.o = random_buffer(qo, 4);
    if (s.kv_type != headwise::KvType::f32) {
      t.k16 = rounded(t.k.get(), kv, s.kv_type);
      t.v16 = rounded(t.v.get(), kv, s.kv_type);
    }
    t.shape = &s;
  }
  return t;
}

int g_threads = 1;
headwise::MachinePeak g_peak;

void run_shape(benchmark::State& state, const Shape& s, Isa isa, bool amx, bool pack) {
  // avx512 runs twice where the CPU has AMX: its amx lines (attention.inc) and without.
  if (isa == Isa::avx512) headwise::kernels::set_amx_override(amx);
  headwise::kernels::set_attn_pack_override(pack);
  struct ClearAmx {
    ~ClearAmx() {
      headwise::kernels::clear_amx_override();
      headwise::kernels::set_attn_pack_override(true);
    }
  } clear_amx;
  if (!headwise::kernels::set_isa_override(isa)) {
    state.SkipWithError("this CPU lacks the ISA");
    return;
  }
  Tensors& t = tensors_for(s);
  headwise::AttentionParams a;
  a.batch = s.batch;
  a.q_len = s.q_len;
  a.kv_len = s.kv_len;
  a.q_heads = s.q_heads;
  a.kv_heads = s.kv_heads;
  a.head_dim = s.head_dim;
  a.causal = s.causal;
  a.threads = g_threads;
  a.kv_type = s.kv_type;
  const auto q = headwise::packed_input(t.q.get(), s.q_len, s.q_heads, s.head_dim);
  const auto kp = headwise::packed_input(t.k.get(), s.kv_len, s.kv_heads, s.head_dim);
  const auto vp = headwise::packed_input(t.v.get(), s.kv_len, s.kv_heads, s.head_dim);
  const headwise::AttnKvInput k(t.kd(), kp.batch_stride, kp.pos_stride, kp.head_stride);
  const headwise::AttnKvInput v(t.vd(), vp.batch_stride, vp.pos_stride, vp.head_stride);
  const auto o = headwise::packed_output(t.o.get(), s.q_len, s.q_heads, s.head_dim);

  // One untimed call: sizes the workspace and catches validation errors.
  headwise::Status st = headwise::attention(a, q, k, v, o);
  if (!st.ok()) {
    headwise::kernels::clear_isa_override();
    state.SkipWithError(st.message().c_str());
    return;
  }
  // Our own wall clock over the same loop gives the percentages: a rate counter would
  // be printed with a misleading "/s" unit.
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    st = headwise::attention(a, q, k, v, o);
    benchmark::DoNotOptimize(t.o.get());
    benchmark::ClobberMemory();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  headwise::kernels::clear_isa_override();

  const double iters = double(state.iterations());
  using C = benchmark::Counter;
  state.counters["flops"] = C(s.flops(), C::kIsIterationInvariantRate, C::OneK::kIs1000);
  const double peak = g_peak.fma_gflops(headwise::kernels::isa_name(isa), g_threads) * 1e9;
  if (peak > 0 && wall > 0) state.counters["pct_peak"] = 100.0 * s.flops() * iters / wall / peak;
  if (s.decode()) {
    state.counters["kv_read"] = C(s.kv_bytes(), C::kIsIterationInvariantRate, C::OneK::kIs1000);
    const double bw = g_peak.read_gbs(g_threads) * 1e9;
    if (bw > 0 && wall > 0) state.counters["pct_bw"] = 100.0 * s.kv_bytes() * iters / wall / bw;
  }
  state.SetLabel(std::string(headwise::kernels::isa_name(isa)) + (amx ? " + amx" : "") + (pack ? "" : " unpacked") + ", " +
                 std::to_string(g_threads) + " threads");
}

int threads_from_env() {
  const char* env = std::getenv("HEADWISE_THREADS");
  if (env == nullptr || *env == '\0') return omp_get_max_threads();
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096) {
    std::fprintf(stderr, "attention_bench: HEADWISE_THREADS='%s' is not a thread count\n", env);
    std::exit(2);
  }
  return int(n);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  g_threads = threads_from_env();

  for (const Shape& s : kShapes)
    for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar}) {
      if (!headwise::kernels::may_use(isa)) continue;
      for (bool amx : {true, false}) {
        // (the amx lines: prefill over a 16-bit cache)
        if (amx && (isa != Isa::avx512 || !headwise::kernels::amx_detected() || s.decode() ||
                    s.kv_type == headwise::KvType::f32))
          continue;
        for (bool pack : {true, false}) {
          if (!pack && !amx) continue;
          const std::string name =
              s.name() + "/" + headwise::kernels::isa_name(isa) + (amx ? "_amx" : "") + (pack ? "" : "_unpacked");
          benchmark::RegisterBenchmark(name.c_str(), [&s, isa, amx, pack](benchmark::State& st) {
            run_shape(st, s, isa, amx, pack);
          })->UseRealTime()->Unit(benchmark::kMillisecond);
        }
      }
    }

  // Measured once, before any benchmark runs, on the same thread count.
  g_peak = headwise::measure_peak(g_threads);
  benchmark::AddCustomContext("headwise_threads", std::to_string(g_threads));
  benchmark::AddCustomContext("machine_peak", g_peak.summary());

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
