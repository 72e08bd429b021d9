// avx2 probe kernels: FMA throughput and streaming read rate.
#include <xsimd/xsimd.hpp>

#include "kernels/probe/probe.hpp"

namespace headwise::kernels {
namespace {
using V = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
// 12 independent accumulators hide the FMA latency (4 cycles × 2 pipes = 8 needed).
constexpr int kChains = 12;
}  // namespace

double fma_probe_avx2(int64_t iters, float* sink) {
  V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = V(1.0f + i * 1e-3f);
  const V a(0.999999f), b(1e-7f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = xsimd::fma(acc[i], a, b);
  V s = acc[0];
  for (int i = 1; i < kChains; ++i) s += acc[i];
  *sink += xsimd::hadd(s);
  return 2.0 * V::size * kChains * double(iters);
}

float read_probe_avx2(const float* p, size_t n) {
  V s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
  for (size_t i = 0; i < n; i += 4 * V::size) {
    s0 += V::load_aligned(p + i);
    s1 += V::load_aligned(p + i + V::size);
    s2 += V::load_aligned(p + i + 2 * V::size);
    s3 += V::load_aligned(p + i + 3 * V::size);
  }
  return xsimd::hadd((s0 + s1) + (s2 + s3));
}

}  // namespace headwise::kernels
