// Q5_K products on x86 (AVX2 and AVX-512 translation units), on the shared 8-bit
// multiplies (dot_x86.hpp: MaddAvx2, DpbusdVnni) and register tiles (tile_x86.hpp).
// Q5_K is Q4_K with a 5th bit per level from qh: q = nibble | 16·bit, q ∈ [0, 31], so
// u8 operands stay ≤ 128 (vpmaddubsw's pair sums 2·31·127 < 2¹⁵) and the products are
// Q4_K's plus a few vector ops per 32 levels to merge the 5th bits. Kept in its own
// header so that changes to the Q4_K/Q6_K kernels leave it alone.
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include "kernels/quant/tile_x86.hpp"

namespace headwise::kernels::quant {
namespace {

// Bit j (0..7) of every byte of qh as 16: the 5th bit of the levels of sub-block j.
// Branch-free for any j (the tiles' sub-block loops are not always unrolled): the
// byte mask 1 << j from a table, compare, keep 16.
alignas(32) constexpr uint8_t kQ5Bit[8][32] = {
#define HW_Q5_ROW(b) {b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b}
    HW_Q5_ROW(1), HW_Q5_ROW(2), HW_Q5_ROW(4), HW_Q5_ROW(8), HW_Q5_ROW(16), HW_Q5_ROW(32), HW_Q5_ROW(64), HW_Q5_ROW(128)
#undef HW_Q5_ROW
};
inline __m256i q5_high_bits(__m256i qh, int j) {
  const __m256i m = _mm256_load_si256(reinterpret_cast<const __m256i*>(kQ5Bit[j]));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, m), m), _mm256_set1_epi8(0x10));
}

// The 32 levels of sub-block j of a Q5_K block.
inline __m256i q5_levels(const BlockQ5_K& B, __m256i qh, int j) {
  const __m256i raw = load32(B.q + 32 * (j / 2));
  const __m256i lo = _mm256_and_si256(j & 1 ? _mm256_srli_epi16(raw, 4) : raw, _mm256_set1_epi8(0xF));
  return _mm256_or_si256(lo, q5_high_bits(qh, j));
}

// Q5_K · Q8A: per sub-block j, d·sc_j·x.d·Σ q·x − dmin·m_j·x.d·Σx.
template <class D>
float dot_q5_k(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ5_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float corr = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const BlockQ5_K& B = b[sb];
    const BlockQ8A* x = a + sb * 8;
    for (int o = 0; o < int(sizeof B); o += 64) ahead(reinterpret_cast<const uint8_t*>(&B) + o);
    const float d = h2f(B.d), dmin = h2f(B.dmin);
    // qh shifted right by 2c before chunk c: its bits 0 and 1 are sub-blocks 2c and 2c + 1's
    // (the 16-bit shifts bring the next byte's bits into bits 2-7 only, never read here)
    __m256i qh = load32(B.qh);
    const __m256i low4 = _mm256_set1_epi8(0xF), bit4 = _mm256_set1_epi8(0x10);
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      k_scale_min(B.scales, 2 * c, &sc0, &m0);
      k_scale_min(B.scales, 2 * c + 1, &sc1, &m1);
      const BlockQ8A &x0 = x[2 * c], &x1 = x[2 * c + 1];
      const __m256i raw = load32(B.q + 32 * c);
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(raw, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit4));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4),
                                         _mm256_and_si256(_mm256_slli_epi16(qh, 3), bit4));
      qh = _mm256_srli_epi16(qh, 2);
      acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(D::dot(q0, load32(x0.q))), _mm256_set1_ps(d * sc0 * x0.d), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(D::dot(q1, load32(x1.q))), _mm256_set1_ps(d * sc1 * x1.d), acc1);
      corr += dmin * (m0 * x0.d * float(x0.sum[0] + x0.sum[1]) + m1 * x1.d * float(x1.sum[0] + x1.sum[1]));
    }
  }
  return hsum8(_mm256_add_ps(acc0, acc1)) - corr;
}

// The prefill tile's view of Q5_K (tile_x86.hpp): as TQ4_K, with the 5th bits.
template <class D>
struct TQ5_K {
  using Dot = D;
  static constexpr bool kSignedQ = false;
  static constexpr int kOffset = 0;
  static constexpr bool kMins = true;       // Prep::m: dmin·m_j per sub-block
  static constexpr bool kCachePrep = true;  // 16 scalar 6-bit decodes per block, as Q4_K
  using B = BlockQ5_K;
  static constexpr int kBlock = kQKK, kSub = 8;
  struct Prep { float s[8], m[8]; };
  static Prep prep(const B& b) {
    Prep p;
    const float d = h2f(b.d), dmin = h2f(b.dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      k_scale_min(b.scales, j, &sc, &m);
      p.s[j] = d * sc;
      p.m[j] = dmin * m;
    }
    return p;
  }
  static SubW sub(const B& b, const Prep& p, int j) {
    return {q5_levels(b, load32(b.qh), j), _mm256_set1_ps(p.s[j]), p.m[j], p.m[j], p.s[j], p.s[j]};
  }
  static __m256i pair(__m256i q, __m256i x) { return D::dot(q, x); }
  static __m256i pair_acc(__m256i acc, __m256i q, __m256i x) { return D::dot_acc(acc, q, x); }
};

}  // namespace
}  // namespace headwise::kernels::quant
