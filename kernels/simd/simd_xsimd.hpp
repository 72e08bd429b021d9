// The vector vocabulary kernels are written in, for one xsimd architecture.
//
// Include only from a translation unit compiled for that architecture (the
// *_avx512.cpp / *_avx2.cpp files), inside an anonymous namespace's reach: the
// functions are static inline so no other TU can pick up a copy built for a wider ISA.
#pragma once

#include <xsimd/xsimd.hpp>

#include <cstdint>

namespace headwise::kernels::simd {

template <class Arch>
struct F32 {
  using V = xsimd::batch<float, Arch>;
  using I = xsimd::batch<int32_t, Arch>;
  static constexpr int W = static_cast<int>(V::size);

  static inline V zero() { return V(0.0f); }
  static inline V set1(float x) { return V(x); }
  static inline V load(const float* p) { return V::load_unaligned(p); }
  static inline V loada(const float* p) { return V::load_aligned(p); }
  static inline void store(float* p, V v) { v.store_unaligned(p); }
  static inline void storea(float* p, V v) { v.store_aligned(p); }
  // a*b + c, fused. (xsimd 8.1 has no AVX-512 fma kernel and falls back to a*b + c,
  // which is fused only if the compiler contracts it.)
  static inline V fma(V a, V b, V c) {
#if defined(__AVX512F__)
    if constexpr (W == 16) return V(_mm512_fmadd_ps(a, b, c));
#endif
    return xsimd::fma(a, b, c);
  }
  static inline V max(V a, V b) { return xsimd::max(a, b); }
  static inline float hsum(V a) { return xsimd::hadd(a); }
  static inline float hmax(V a) {
    // A shuffle tree (4 levels on a zmm, 3 on a ymm) rather than 15 dependent scalar
    // compares: decode attention takes one per query row and tile of keys.
#if defined(__AVX512F__)
    if constexpr (W == 16) return _mm512_reduce_max_ps(a);
#endif
#if defined(__AVX__)
    if constexpr (W == 8) {
      const __m256 x = a;
      __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
      m = _mm_max_ps(m, _mm_movehl_ps(m, m));
      m = _mm_max_ss(m, _mm_movehdup_ps(m));
      return _mm_cvtss_f32(m);
    }
#endif
    alignas(64) float t[W];
    a.store_aligned(t);
    float m = t[0];
    for (int i = 1; i < W; ++i) m = t[i] > m ? t[i] : m;
    return m;
  }
  // Lanes i < n of p, zeros elsewhere (tail loads).
  static inline V load_partial(const float* p, int n) {
    alignas(64) float t[W] = {};
    for (int i = 0; i < n; ++i) t[i] = p[i];
    return V::load_aligned(t);
  }
  // Lanes with first + lane < bound become −inf (causal mask on a query × key grid).
  static inline V mask_lt(V x, int first, int bound) {
    alignas(64) float iota[W];
    for (int i = 0; i < W; ++i) iota[i] = static_cast<float>(i);
    // Positions are < 2^24, so float arithmetic on them is exact.
    const V pos = V::load_aligned(iota) + V(static_cast<float>(first));
    return xsimd::select(pos < V(static_cast<float>(bound)), V(-__builtin_inff()), x);
  }
  // out[i] = Σ lanes of acc[i], for i < W (W dot products finished at once).
  // Always inlined: its callers' accumulator arrays then stay in registers (out of line,
  // the array is passed in memory, and the decode attention's scores loop, grown past
  // GCC's inlining limit, kept every accumulator on the stack: 2x slower).
  __attribute__((always_inline)) static inline V hsum_lanes(const V* acc) {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    if constexpr (W == 16) {
      // A tree of in-lane shuffles and adds, 45 single-µop instructions (xsimd 8.1's
      // AVX-512 haddp returns its sums in a shuffled lane order; folding each zmm to a
      // ymm for the AVX2 haddp took ~80 µops: vhaddps is 3). Level 1: pairs (2j, 2j+1)
      // interleaved per 128-bit block, [a0+a2, b0+b2, a1+a3, b1+b3]; level 2: fours,
      // [A, B, C, D] partial sums per block; levels 3-4: the four blocks summed across,
      // acc 4m..4m+3 landing in block m.
      __m512 t[8], u[4];
      for (int j = 0; j < 8; ++j) {
        const __m512 a = acc[2 * j], b = acc[2 * j + 1];
        t[j] = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
      }
      for (int m = 0; m < 4; ++m)
        u[m] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * m], t[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(t[2 * m], t[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
      const __m512 w0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
      const __m512 w1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(3, 1, 3, 1)));
      return V(_mm512_add_ps(_mm512_shuffle_f32x4(w0, w1, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(w0, w1, _MM_SHUFFLE(3, 1, 3, 1))));
    }
#endif
    return xsimd::haddp(acc);
  }

  // Transposes the W×W block r[0..W) in place (r[i] lane j ↔ r[j] lane i): how query
  // tiles move between row layout and the "one feature of W queries per vector" layout.
  static inline void transpose(V* r) {
#if defined(__AVX512F__)
    if constexpr (W == 16) {
      __m512 t[16], u[16];
      for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
      }
      for (int i = 0; i < 4; ++i) {
        u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_f32x4(u[i], u[4 + i], 0x88);
        t[4 + i] = _mm512_shuffle_f32x4(u[i], u[4 + i], 0xdd);
        t[8 + i] = _mm512_shuffle_f32x4(u[8 + i], u[12 + i], 0x88);
        t[12 + i] = _mm512_shuffle_f32x4(u[8 + i], u[12 + i], 0xdd);
      }
      for (int i = 0; i < 8; ++i) {
        r[i] = V(_mm512_shuffle_f32x4(t[i], t[8 + i], 0x88));
        r[8 + i] = V(_mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd));
      }
      return;
    }
#endif
#if defined(__AVX2__)
    if constexpr (W == 8) {
      __m256 t[8], u[8];
      for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
      }
      for (int i = 0; i < 2; ++i) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      for (int i = 0; i < 4; ++i) {
        r[i] = V(_mm256_permute2f128_ps(u[i], u[4 + i], 0x20));
        r[4 + i] = V(_mm256_permute2f128_ps(u[i], u[4 + i], 0x31));
      }
      return;
    }
#endif
    alignas(64) float t[W * W];
    for (int i = 0; i < W; ++i) r[i].store_aligned(t + i * W);
    for (int i = 0; i < W; ++i) {
      alignas(64) float c[W];
      for (int j = 0; j < W; ++j) c[j] = t[j * W + i];
      r[i] = V::load_aligned(c);
    }
  }

  // 2^x for x <= 0 (the softmax range), relative error < 2e-7; x < -126 gives exactly 0
  // (so masked scores of -inf contribute nothing).
  // Cephes exp2f: 2^x = 2^n · p(f), n = round(x), f = x − n ∈ [−½, ½].
  __attribute__((always_inline)) static inline V exp2(V x) {
    const V xc = xsimd::max(x, V(-126.0f));
    const V n = xsimd::nearbyint(xc);
    const V f = xc - n;
    V p = V(1.535336188319500e-4f);
    p = xsimd::fma(p, f, V(1.339887440266574e-3f));
    p = xsimd::fma(p, f, V(9.618437357674640e-3f));
    p = xsimd::fma(p, f, V(5.550332471162809e-2f));
    p = xsimd::fma(p, f, V(2.402264791363012e-1f));
    p = xsimd::fma(p, f, V(6.931472028550421e-1f));
    p = xsimd::fma(p, f, V(1.0f));
    const I bits = xsimd::bitwise_cast<I>(p) + (xsimd::to_int(n) << 23);
    return xsimd::select(x < V(-126.0f), V(0.0f), xsimd::bitwise_cast<V>(bits));
  }
};

}  // namespace headwise::kernels::simd
