// Loads of KV-cache elements widened to fp32 vectors in registers, for the vector
// vocabulary S (simd::F32<arch> or simd::Scalar) and element tag E (KvF32, KvF16,
// KvBf16 from half.hpp). f16 widens with F16C's vcvtph2ps; bf16 is the top half of an
// fp32, so zero-extending each 16-bit lane to 32 and shifting it left by 16 is exact.
// Include from a translation unit compiled for S's architecture only.
#pragma once

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <type_traits>

#include "kernels/simd/half.hpp"

namespace headwise::kernels::simd {

template <class S, class E>
struct Widen {
  using V = typename S::V;
  using T = typename E::T;
  static constexpr int W = S::W;

  static inline V load(const T* p) {
    if constexpr (std::is_same_v<E, KvF32>) {
      return S::load(p);
    } else if constexpr (W == 1) {
      return widen(E(), *p);
    } else {
#if defined(__AVX512F__)
      if constexpr (W == 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        if constexpr (std::is_same_v<E, KvF16>) return V(_mm512_cvtph_ps(h));
        else return V(_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
      }
#endif
#if defined(__AVX2__) && defined(__F16C__)
      if constexpr (W == 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        if constexpr (std::is_same_v<E, KvF16>) return V(_mm256_cvtph_ps(h));
        else return V(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
      }
#endif
      alignas(64) float t[W];
      for (int i = 0; i < W; ++i) t[i] = widen(E(), p[i]);
      return S::loada(t);
    }
  }

  // Lanes i < n of p, zeros elsewhere (tail loads).
  static inline V load_partial(const T* p, int n) {
    if constexpr (std::is_same_v<E, KvF32>) {
      return S::load_partial(p, n);
    } else {
      alignas(64) T t[W] = {};
      for (int i = 0; i < n; ++i) t[i] = p[i];
      return load(t);
    }
  }

  static inline float one(const T* p) { return widen(E(), *p); }

  // dst[0 .. n) = widen(src[0 .. n)): one row of a K or V tile into fp32 scratch.
  static inline void row(const T* src, float* dst, int n) {
    int i = 0;
    for (; i + W <= n; i += W) S::store(dst + i, load(src + i));
    for (; i < n; ++i) dst[i] = one(src + i);
  }
};

}  // namespace headwise::kernels::simd
