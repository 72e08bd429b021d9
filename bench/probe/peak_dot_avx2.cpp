// avx2 int8 probe: vpmaddubsw (32 u8·s8 products summed in pairs into 16 int16 lanes),
// the multiply that every AVX2 kernel of the integer weight types runs on (with a
// vpmaddwd or a 16-bit add after it: kernels/quant/dot_x86.hpp). Its rate is the
// ceiling of int8 prefill on a CPU without AVX512-VNNI; next to the fp32 FMA probe it
// says how much an 8-bit product can gain (Zen 1 issues it on one pipe only).
#include <immintrin.h>

#include <cstdint>

#include "bench/probe/probe.hpp"

namespace headwise::kernels {

// 12 independent chains, as the FMA probe; the 16-bit sums wrap (fine for a sink).
double dot_int8_probe_avx2(int64_t iters, float* sink) {
  constexpr int kChains = 12;
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi16(int16_t(i));
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-1);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_add_epi16(acc[i], _mm256_maddubs_epi16(a, b));
  __m256i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_epi16(s, acc[i]);
  alignas(32) uint16_t lanes[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  uint32_t folded = 0;
  for (uint16_t v : lanes) folded += v;
  *sink += float(folded);
  return 2.0 * 32 * kChains * double(iters);  // ops: 2 per multiply-add
}

}  // namespace headwise::kernels
