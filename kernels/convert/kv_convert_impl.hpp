// The KV-cache conversion bodies, templated on the vector vocabulary S; each ISA's
// translation unit (kv_convert_<isa>.cpp) instantiates them once.
//   f16:  F16C vcvtps2ph with _MM_FROUND_TO_NEAREST_INT (round to nearest even, no
//         flush of subnormals; NaN becomes a quiet NaN with its top payload bits)
//   bf16: integer round to nearest even, u' = (u + 0x7fff + bit16(u)) >> 16, NaN made
//         quiet as (u >> 16) | 0x40: the same bits on every ISA (avx512_bf16's
//         vcvtneps2bf16 would flush subnormals, so it is not used).
// Tails and the scalar ISA use half.hpp's conversions, which give the same bits.
#pragma once

#include <cstdint>

#include "kernels/simd/half.hpp"
#include "kernels/simd/widen.hpp"

namespace headwise::kernels {
namespace {

template <class S>
struct KvConvertBody {
  static constexpr int W = S::W;

  static void to_f16(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    if constexpr (W == 16)
      for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
#if defined(__AVX2__) && defined(__F16C__)
    if constexpr (W == 8)
      for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
  }

  static void to_bf16(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
    if constexpr (W == 16) {
      const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
      const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1),
                    quiet = _mm512_set1_epi32(0x40);
      for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(src + i));
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
        const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, bias), odd), 16);
        const __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet);
        const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs_mask), inf);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, r, q)));
      }
    }
#endif
#if defined(__AVX2__)
    if constexpr (W == 8) {
      const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
      const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1),
                    quiet = _mm256_set1_epi32(0x40);
      for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + i));
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
        const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), odd), 16);
        const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
        const __m256i v = _mm256_blendv_epi8(r, q, nan);  // 8 values ≤ 0xffff
        // pack to 16 bits (per 128-bit lane), then put the two lanes' halves together
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(p));
      }
    }
#endif
    for (; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
  }

  template <class E>
  static void widen_rows(const uint16_t* src, float* dst, int64_t n) {
    using L = simd::Widen<S, E>;
    int64_t i = 0;
    for (; i + W <= n; i += W) S::store(dst + i, L::load(src + i));
    for (; i < n; ++i) dst[i] = L::one(src + i);
  }
};

}  // namespace
}  // namespace headwise::kernels
