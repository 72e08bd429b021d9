// Times the probe kernels (bench/probe/) to measure this machine's limits.
#include "bench/probe/peak.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "kernels/dispatch.hpp"
#include "bench/probe/probe.hpp"

namespace headwise {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// GFLOP/s of `probe` on n threads: best of 3 runs of about `secs` each.
double time_fma(double (*probe)(int64_t, float*), int n, double secs) {
  // Calibrate the iteration count on one thread.
  float sink = 0;
  int64_t iters = 1 << 16;
  for (;;) {
    const auto t0 = Clock::now();
    probe(iters, &sink);
    const double dt = seconds_since(t0);
    if (dt > secs / 4) {
      iters = int64_t(iters * secs / dt);
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double flops = 0;
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(n) reduction(+ : flops)
    {
      float s = 0;
      flops += probe(iters, &s);
      if (s == 12345.0f) std::printf(" ");  // keep the result alive
    }
    best = std::max(best, flops / seconds_since(t0) / 1e9);
  }
  return best;
}

}  // namespace

ReadProbe::ReadProbe(int threads) : threads_(threads > 0 ? threads : omp_get_max_threads()) {
  if (!kernels::may_use(kernels::Isa::avx2)) return;
  floats_ = size_t(64) << 20;  // 256 MiB: several times any last-level cache
  buf_ = static_cast<float*>(std::aligned_alloc(64, floats_ * sizeof(float)));
  if (!buf_) {
    floats_ = 0;
    return;
  }
  // Touched first by the threads that read it, so its pages sit near them.
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (size_t i = 0; i < floats_; ++i) buf_[i] = 1.0f;
}

ReadProbe::~ReadProbe() { std::free(buf_); }

double ReadProbe::gbs(int passes) {
  if (!buf_) return 0;
  auto probe = kernels::may_use(kernels::Isa::avx512) ? kernels::read_probe_avx512
                                                      : kernels::read_probe_avx2;
  // The best pass is the machine's limit: a slower one met other tenants' traffic.
  double best = 0;
  for (int rep = 0; rep <= passes; ++rep) {
    float sum = 0;
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads_) reduction(+ : sum)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const size_t per = floats_ / nt / 64 * 64;
      sum += probe(buf_ + per * t, per);
    }
    const double dt = seconds_since(t0);
    if (sum == 12345.0f) std::printf(" ");  // keep the reads alive
    if (rep > 0) best = std::max(best, floats_ * 4.0 / dt / 1e9);  // pass 0 warms TLBs
  }
  return best;
}

double MachinePeak::fma_gflops(const std::string& isa, int nthreads) const {
  const bool one = nthreads <= 1;
  if (isa == "avx512") return one ? fma_avx512_1t : fma_avx512_nt;
  return one ? fma_avx2_1t : fma_avx2_nt;
}

std::string MachinePeak::summary() const {
  char buf[512], tiles[96] = "";
  if (tile_bf16_1t > 0) std::snprintf(tiles, sizeof tiles, "; AMX bf16 tiles %.0f / %.0f GFLOP/s", tile_bf16_1t, tile_bf16_nt);
  std::snprintf(buf, sizeof buf,
                "peak fp32 FMA: avx512 %.0f GFLOP/s (1 thread) %.0f (%d threads); "
                "avx2 %.0f / %.0f; bf16 dot %.0f / %.0f; int8 dot %.0f / %.0f GOP/s, avx2 %.0f / %.0f%s; "
                "read bandwidth %.1f GB/s (1 thread) %.1f (%d threads)",
                fma_avx512_1t, fma_avx512_nt, threads, fma_avx2_1t, fma_avx2_nt, dot_bf16_1t,
                dot_bf16_nt, dot_int8_1t, dot_int8_nt, dot_int8_avx2_1t, dot_int8_avx2_nt, tiles, read_1t, read_nt,
                threads);
  return buf;
}

MachinePeak measure_peak(int threads, double secs) {
  MachinePeak m;
  m.threads = threads > 0 ? threads : omp_get_max_threads();
  using kernels::Isa;
  if (kernels::may_use(Isa::avx512)) {
    m.fma_avx512_1t = time_fma(kernels::fma_probe_avx512, 1, secs);
    m.fma_avx512_nt = time_fma(kernels::fma_probe_avx512, m.threads, secs);
  }
  if (kernels::may_use(Isa::avx2)) {
    m.fma_avx2_1t = time_fma(kernels::fma_probe_avx2, 1, secs);
    m.fma_avx2_nt = time_fma(kernels::fma_probe_avx2, m.threads, secs);
    m.dot_int8_avx2_1t = time_fma(kernels::dot_int8_probe_avx2, 1, secs);
    m.dot_int8_avx2_nt = time_fma(kernels::dot_int8_probe_avx2, m.threads, secs);
  }
  __builtin_cpu_init();
  if (kernels::may_use(Isa::avx512) && __builtin_cpu_supports("avx512bf16")) {
    m.dot_bf16_1t = time_fma(kernels::dot_bf16_probe_avx512, 1, secs);
    m.dot_bf16_nt = time_fma(kernels::dot_bf16_probe_avx512, m.threads, secs);
  }
  if (kernels::may_use(Isa::avx512) && __builtin_cpu_supports("avx512vnni")) {
    m.dot_int8_1t = time_fma(kernels::dot_int8_probe_avx512, 1, secs);
    m.dot_int8_nt = time_fma(kernels::dot_int8_probe_avx512, m.threads, secs);
  }
  if (kernels::amx_usable()) {
    m.tile_bf16_1t = time_fma(kernels::tile_bf16_probe_amx, 1, secs);
    m.tile_bf16_nt = time_fma(kernels::tile_bf16_probe_amx, m.threads, secs);
  }
  {
    ReadProbe one(1);
    m.read_1t = one.gbs();
  }
  ReadProbe all(m.threads);
  m.read_nt = all.gbs();
  return m;
}

}  // namespace headwise
