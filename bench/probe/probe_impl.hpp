// The probe bodies, for one xsimd architecture; instantiated once per ISA
// (peak_fma_<isa>.cpp).
#pragma once

#include "kernels/simd/simd_xsimd.hpp"

#include <cstddef>
#include <cstdint>

namespace headwise::kernels {
namespace {

// 12 independent accumulators hide the FMA latency (4 cycles × 2 pipes = 8 needed).
template <class Arch>
double fma_probe(int64_t iters, float* sink) {
  using S = simd::F32<Arch>;
  using V = typename S::V;
  constexpr int kChains = 12;
  V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = V(1.0f + i * 1e-3f);
  const V a(0.999999f), b(1e-7f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = S::fma(acc[i], a, b);
  V s = acc[0];
  for (int i = 1; i < kChains; ++i) s += acc[i];
  *sink += xsimd::hadd(s);
  return 2.0 * V::size * kChains * double(iters);
}

// Four loads in flight per iteration, and software prefetches 8 KiB ahead (as the
// decode kernels do: without them this core's prefetchers leave ~20% of the bandwidth
// unused); the sum keeps the reads from being elided.
template <class Arch>
float read_probe(const float* p, size_t n) {
  using V = xsimd::batch<float, Arch>;
  V s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
  constexpr size_t kAhead = 8192 / sizeof(float);
  for (size_t i = 0; i < n; i += 4 * V::size) {
    for (int c = 0; c < 4 * int(V::size); c += 16) __builtin_prefetch(p + i + kAhead + c, 0, 0);
    s0 += V::load_aligned(p + i);
    s1 += V::load_aligned(p + i + V::size);
    s2 += V::load_aligned(p + i + 2 * V::size);
    s3 += V::load_aligned(p + i + 3 * V::size);
  }
  return xsimd::hadd((s0 + s1) + (s2 + s3));
}

}  // namespace
}  // namespace headwise::kernels
