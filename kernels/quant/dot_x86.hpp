// Row·input dot products of the weight types on x86 (AVX2 and AVX-512 translation
// units), templated on the 8-bit multiply: AVX2's vpmaddubsw + vpmaddwd, or
// AVX512-VNNI's vpdpbusd (on 256-bit vectors: this CPU runs AVX-512 at the 256-bit
// rate, so zmm would only halve the instruction count, not raise the arithmetic rate).
// Both multiply unsigned bytes by signed bytes into 32-bit lane sums of 4 products.
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include <immintrin.h>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"

namespace headwise::kernels::quant {
namespace {

// Σ of groups of 4 u8·s8 products per 32-bit lane. vpmaddubsw saturates its 16-bit
// pair sums: every caller keeps u ≤ 128 and |s| ≤ 127 (2·128·127 < 2¹⁵).
// kTileW: weight rows per prefill register tile (tile_x86.hpp): 16 ymm registers hold
// 2 × 4 accumulators and their operands, 32 (AVX-512VL) hold 4 × 4.
struct MaddAvx2 {
  static constexpr bool kWideU8 = false;  // u8 operands must stay ≤ 128
  static constexpr int kTileW = 2;
  static constexpr bool kZmm = false;
  static inline __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static inline __m256i dot_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_add_epi32(acc, dot(u, s)); }
};
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
struct DpbusdVnni {
  static constexpr bool kWideU8 = true;  // no 16-bit intermediate: any u8 operand
  static constexpr int kTileW = 4;
  // Prefill tiles take two 32-element sub-blocks per zmm instruction (tile_x86.hpp):
  // at the 256-bit rate that is the same arithmetic in half the instructions.
  static constexpr bool kZmm = true;
  static inline __m256i dot(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }
  static inline __m256i dot_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
};
#endif

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
// Ask for the weights this many bytes ahead: the hardware prefetcher alone ramps up
// too slowly on the 1-10 MB matrices of a decode step (as in kernels/matmul/gemv).
constexpr int kAheadBytes = 2048;
inline void ahead(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kAheadBytes, _MM_HINT_T0); }

// Q8_0 · Q8A: signed × signed through the sign trick |w| · (x·sign(w)).
template <class D>
float dot_q8_0(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  const int64_t nb = K / kQK;
  auto one = [&](int64_t i, __m256 acc) {
    const __m256i wq = load32(b[i].q), xq = load32(a[i].q);
    const __m256i p = D::dot(_mm256_abs_epi8(wq), _mm256_sign_epi8(xq, wq));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(h2f(b[i].d) * a[i].d), acc);
  };
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    ahead(b + i);
    acc0 = one(i, acc0);
    acc1 = one(i + 1, acc1);
  }
  if (i < nb) acc0 = one(i, acc0);
  return hsum8(_mm256_add_ps(acc0, acc1));
}

// Q4_0 · Q8A: Σ d·(q − 8)·x = d·(Σ q·x − 8·Σx), q unsigned in [0, 15].
template <class D>
float dot_q4_0(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ4_0*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float corr = 0;
  const int64_t nb = K / kQK;
  auto one = [&](int64_t i, __m256 acc) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].q));
    // elements 0..15 are the low nibbles, 16..31 the high ones
    const __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), low4);
    const float s = h2f(b[i].d) * a[i].d;
    corr += s * float(a[i].sum[0] + a[i].sum[1]);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(D::dot(q, load32(a[i].q))), _mm256_set1_ps(s), acc);
  };
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    ahead(b + i);
    acc0 = one(i, acc0);
    acc1 = one(i + 1, acc1);
  }
  if (i < nb) acc0 = one(i, acc0);
  return hsum8(_mm256_add_ps(acc0, acc1)) - 8.0f * corr;
}

// Q4_K · Q8A: per sub-block j, d·sc_j·x.d·Σ q·x − dmin·m_j·x.d·Σx.
template <class D>
float dot_q4_k(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ4_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float corr = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const BlockQ4_K& B = b[sb];
    const BlockQ8A* x = a + sb * 8;
    ahead(&B);
    ahead(reinterpret_cast<const uint8_t*>(&B) + 64);
    ahead(reinterpret_cast<const uint8_t*>(&B) + 128);
    const float d = h2f(B.d), dmin = h2f(B.dmin);
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      k_scale_min(B.scales, 2 * c, &sc0, &m0);
      k_scale_min(B.scales, 2 * c + 1, &sc1, &m1);
      const __m256i raw = load32(B.q + 32 * c);
      const __m256i lo = _mm256_and_si256(raw, low4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      const BlockQ8A &x0 = x[2 * c], &x1 = x[2 * c + 1];
      acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(D::dot(lo, load32(x0.q))), _mm256_set1_ps(d * sc0 * x0.d), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(D::dot(hi, load32(x1.q))), _mm256_set1_ps(d * sc1 * x1.d), acc1);
      corr += dmin * (m0 * x0.d * float(x0.sum[0] + x0.sum[1]) + m1 * x1.d * float(x1.sum[0] + x1.sum[1]));
    }
  }
  return hsum8(_mm256_add_ps(acc0, acc1)) - corr;
}

// Q6_K · Q8A: per activation block (two 16-element sub-blocks, lanes 0-3 and 4-7 of
// the dot), d·x.d·(sc_lo·Σ_lo q·x + sc_hi·Σ_hi q·x) − 32·d·x.d·(sc_lo·Σ_lo x + sc_hi·Σ_hi x).
template <class D>
float dot_q6_k(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  const __m256i low4 = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float corr = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const BlockQ6_K& B = b[sb];
    for (int o = 0; o < int(sizeof B); o += 64) ahead(reinterpret_cast<const uint8_t*>(&B) + o);
    const float d = h2f(B.d);
    for (int h = 0; h < 2; ++h) {
      const __m256i qa = load32(B.ql + 64 * h), qb = load32(B.ql + 64 * h + 32), qh = load32(B.qh + 32 * h);
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(qa, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
      q[1] = _mm256_or_si256(_mm256_and_si256(qb, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qa, 4), low4), _mm256_and_si256(qh, bits45));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
      const int8_t* sc = B.scales + 8 * h;
      for (int g = 0; g < 4; ++g) {
        const BlockQ8A& x = a[sb * 8 + 4 * h + g];
        const float f = d * x.d, f0 = f * sc[2 * g], f1 = f * sc[2 * g + 1];
        const __m256 fv = _mm256_set_m128(_mm_set1_ps(f1), _mm_set1_ps(f0));
        const __m256 p = _mm256_cvtepi32_ps(D::dot(q[g], load32(x.q)));
        if (g & 1) acc1 = _mm256_fmadd_ps(p, fv, acc1);
        else acc0 = _mm256_fmadd_ps(p, fv, acc0);
        corr += f0 * float(x.sum[0]) + f1 * float(x.sum[1]);
      }
    }
  }
  return hsum8(_mm256_add_ps(acc0, acc1)) - 32.0f * corr;
}

}  // namespace
}  // namespace headwise::kernels::quant
