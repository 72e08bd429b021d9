// avx512 dot-product probes: the bf16 (vdpbf16ps: 32 multiply-adds of bf16 pairs into
// 16 fp32 sums) and int8 (vpdpbusd: 64 u8·s8 multiply-adds into 16 int32 sums) rates,
// the ceilings of prefill with BF16 and int8-quantized weights, next to the fp32 FMA
// probe. Needs AVX512-BF16 and AVX512-VNNI (kernels/sources.cmake adds the flags; the
// caller checks the CPU).
#include <immintrin.h>

#include <cstdint>

#include "bench/probe/probe.hpp"

namespace headwise::kernels {

// 12 independent chains hide the latency, as in the FMA probe.
double dot_bf16_probe_avx512(int64_t iters, float* sink) {
  constexpr int kChains = 12;
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512i a = _mm512_set1_epi16(0x3F80), b = _mm512_set1_epi16(0x0001);  // 1.0, tiny
  const __m512bh ab = reinterpret_cast<const __m512bh&>(a), bb = reinterpret_cast<const __m512bh&>(b);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], ab, bb);
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  *sink += _mm512_reduce_add_ps(s);
  return 2.0 * 32 * kChains * double(iters);  // flops: 2 per multiply-add
}

double dot_int8_probe_avx512(int64_t iters, float* sink) {
  constexpr int kChains = 12;
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-1);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  __m512i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_epi32(s, acc[i]);
  // The chains' sums wrap (that is fine for a sink); fold them as unsigned lanes, since
  // GCC's _mm512_reduce_add_epi32 adds as signed int, which UBSan rightly flags.
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, s);
  uint32_t folded = 0;
  for (uint32_t v : lanes) folded += v;
  *sink += float(folded);
  return 2.0 * 64 * kChains * double(iters);  // ops: 2 per multiply-add
}

}  // namespace headwise::kernels
