// Register-tiled products of the int8 weight types for many input rows (prefill):
// RW weight rows × RA input rows per tile, so each unpacked weight sub-block feeds RA
// dot products and each input block RW of them (one weight row at a time re-reads all
// inputs per row and is bound by the cache, not the multipliers). Per 32-element
// sub-block and pair: one 8-bit dot (D::dot), one int → float, one multiply-add with
// the pair's scale; the offset types' corrections are scalar sums on the side.
// Include only from a *_avx2.cpp / *_avx512.cpp file (after dot_x86.hpp).
#pragma once

#include <algorithm>

#include "kernels/quant/dot_x86.hpp"

namespace headwise::kernels::quant {
namespace {

// One 32-element sub-block of weights, unpacked: unsigned levels q (signed for Q8_0
// without VNNI), per-lane scale ws (lanes 0-3 cover elements 0-15, 4-7 elements 16-31),
// and the offset corrections c0, c1 (result −= x.d·(c0·Σx₀..₁₅ + c1·Σx₁₆..₃₁)).
struct SubW {
  __m256i q;
  __m256 ws;
  float c0, c1;
  float s0, s1;  // the scales of elements 0-15 and 16-31: x = s·q − c
};

template <class D>
struct TQ8_0 {
  using B = BlockQ8_0;
  static constexpr int kBlock = kQK, kSub = 1;
  static constexpr bool kSignedQ = !D::kWideU8;
  struct Prep { float d; };
  static Prep prep(const B& b) { return {h2f(b.d)}; }
  static SubW sub(const B& b, const Prep& p, int) {
    const __m256i w = load32(b.q);
    // VNNI multiplies u8·s8 without saturation: w + 128 as unsigned, minus 128·Σx.
    if constexpr (D::kWideU8)
      return {_mm256_xor_si256(w, _mm256_set1_epi8(char(0x80))), _mm256_set1_ps(p.d), 128 * p.d, 128 * p.d, p.d, p.d};
    return {w, _mm256_set1_ps(p.d), 0, 0, p.d, p.d};
  }
  static __m256i pair(__m256i q, __m256i x) {
    if constexpr (D::kWideU8) return D::dot(q, x);
    return D::dot(_mm256_abs_epi8(q), _mm256_sign_epi8(x, q));  // |w|·(x·sign w)
  }
};

template <class D>
struct TQ4_0 {
  static constexpr bool kSignedQ = false;
  using B = BlockQ4_0;
  static constexpr int kBlock = kQK, kSub = 1;
  struct Prep { float d; };
  static Prep prep(const B& b) { return {h2f(b.d)}; }
  static SubW sub(const B& b, const Prep& p, int) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.q));
    const __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0xF));
    return {q, _mm256_set1_ps(p.d), 8 * p.d, 8 * p.d, p.d, p.d};
  }
  static __m256i pair(__m256i q, __m256i x) { return D::dot(q, x); }
};

template <class D>
struct TQ4_K {
  static constexpr bool kSignedQ = false;
  using B = BlockQ4_K;
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
    const __m256i raw = load32(b.q + 32 * (j / 2));
    const __m256i q = _mm256_and_si256(j & 1 ? _mm256_srli_epi16(raw, 4) : raw, _mm256_set1_epi8(0xF));
    return {q, _mm256_set1_ps(p.s[j]), p.m[j], p.m[j], p.s[j], p.s[j]};
  }
  static __m256i pair(__m256i q, __m256i x) { return D::dot(q, x); }
};

template <class D>
struct TQ6_K {
  static constexpr bool kSignedQ = false;
  using B = BlockQ6_K;
  static constexpr int kBlock = kQKK, kSub = 8;
  struct Prep { float s[16]; };
  static Prep prep(const B& b) {
    Prep p;
    const float d = h2f(b.d);
    for (int j = 0; j < 16; ++j) p.s[j] = d * b.scales[j];
    return p;
  }
  // Sub-block j = elements 32j..32j+31 = half h = j / 4, group g = j % 4 (q6_k_scalar.cpp).
  static SubW sub(const B& b, const Prep& p, int j) {
    const int h = j / 4, g = j % 4;
    const __m256i ql = load32(b.ql + 64 * h + 32 * (g & 1)), qh = load32(b.qh + 32 * h);
    const __m256i lo = _mm256_and_si256(g < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0xF));
    // bits 2g, 2g+1 of qh → bits 4, 5
    const __m256i hs = g == 0 ? _mm256_slli_epi16(qh, 4) : g == 1 ? _mm256_slli_epi16(qh, 2)
                     : g == 2 ? qh : _mm256_srli_epi16(qh, 2);
    const __m256i q = _mm256_or_si256(lo, _mm256_and_si256(hs, _mm256_set1_epi8(0x30)));
    const float s0 = p.s[2 * j], s1 = p.s[2 * j + 1];
    return {q, _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(s0)), 32 * s0, 32 * s1, s0, s1};
  }
  static __m256i pair(__m256i q, __m256i x) { return D::dot(q, x); }
};

// y(m + a, n + r) for r < RW, a < RA.
template <class T, int RW, int RA>
void tile(const uint8_t* w, size_t rb, int64_t n, const uint8_t* xa, size_t ab, int m, int64_t K,
          float* y, int64_t ldy) {
  using B = typename T::B;
  __m256 acc[RW][RA];
  float corr[RW][RA];
  for (int r = 0; r < RW; ++r)
    for (int a = 0; a < RA; ++a) {
      acc[r][a] = _mm256_setzero_ps();
      corr[r][a] = 0;
    }
  const B* wr[RW];
  for (int r = 0; r < RW; ++r) wr[r] = reinterpret_cast<const B*>(w + size_t(n + r) * rb);
  const BlockQ8A* xr[RA];
  for (int a = 0; a < RA; ++a) xr[a] = reinterpret_cast<const BlockQ8A*>(xa + size_t(m + a) * ab);
  for (int64_t b = 0; b < K / T::kBlock; ++b) {
    typename T::Prep p[RW];
    for (int r = 0; r < RW; ++r) {
      for (int o = 0; o < int(sizeof(B)); o += 64) ahead(reinterpret_cast<const uint8_t*>(wr[r] + b) + o);
      p[r] = T::prep(wr[r][b]);
    }
    for (int j = 0; j < T::kSub; ++j) {
      SubW s[RW];
      for (int r = 0; r < RW; ++r) s[r] = T::sub(wr[r][b], p[r], j);
      for (int a = 0; a < RA; ++a) {
        const BlockQ8A& x = xr[a][b * T::kSub + j];
        const __m256i xv = load32(x.q);
        const __m256 xd = _mm256_set1_ps(x.d);
        for (int r = 0; r < RW; ++r) {
          acc[r][a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(T::pair(s[r].q, xv)), _mm256_mul_ps(s[r].ws, xd), acc[r][a]);
          corr[r][a] += x.d * (s[r].c0 * float(x.sum[0]) + s[r].c1 * float(x.sum[1]));
        }
      }
    }
  }
  for (int a = 0; a < RA; ++a)
    for (int r = 0; r < RW; ++r) y[(m + a) * ldy + n + r] = hsum8(acc[r][a]) - corr[r][a];
}

constexpr int kTileW = 2, kTileA = 4;
constexpr int kChunkA = 64;  // input rows per pass over the weights: 64 rows of K ≤ 8192 stay in L2

template <class T, int RW>
void tile_rows(const uint8_t* w, size_t rb, int64_t n, const uint8_t* xa, size_t ab, int m, int ra,
               int64_t K, float* y, int64_t ldy) {
  switch (ra) {
    case 1: tile<T, RW, 1>(w, rb, n, xa, ab, m, K, y, ldy); break;
    case 2: tile<T, RW, 2>(w, rb, n, xa, ab, m, K, y, ldy); break;
    case 3: tile<T, RW, 3>(w, rb, n, xa, ab, m, K, y, ldy); break;
    default: tile<T, RW, kTileA>(w, rb, n, xa, ab, m, K, y, ldy); break;
  }
}

// The GemvFn of an int8 type: inputs in chunks of kChunkA rows, weights in pairs of
// rows, tiles of kTileW × kTileA.
template <class T>
void gemm_tiled(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab, int M,
                int64_t K, float* y, int64_t ldy) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(xa);
  for (int m0 = 0; m0 < M; m0 += kChunkA) {
    const int m1 = std::min(M, m0 + kChunkA);
    for (int64_t n = n0; n < n1; n += kTileW) {
      const bool pair = n + 1 < n1;
      for (int m = m0; m < m1; m += kTileA) {
        const int ra = std::min(kTileA, m1 - m);
        if (pair) tile_rows<T, 2>(wb, rb, n, xb, ab, m, ra, K, y, ldy);
        else tile_rows<T, 1>(wb, rb, n, xb, ab, m, ra, K, y, ldy);
      }
    }
  }
}

#if defined(__AVX512BF16__)
// Rows [n0, n1) of W dequantized to bf16 (round to nearest even, vcvtneps2bf16) into
// out (rows ldo elements apart): the weight panel a bf16 GEMM multiplies in prefill.
template <class T>
void dequant_rows_bf16(const void* w, size_t rb, int64_t n0, int64_t n1, int64_t K, uint16_t* out, int64_t ldo) {
  using B = typename T::B;
  for (int64_t n = n0; n < n1; ++n) {
    const B* row = reinterpret_cast<const B*>(static_cast<const uint8_t*>(w) + size_t(n) * rb);
    uint16_t* o = out + (n - n0) * ldo;
    for (int64_t b = 0; b < K / T::kBlock; ++b) {
      const typename T::Prep p = T::prep(row[b]);
      for (int j = 0; j < T::kSub; ++j) {
        const SubW s = T::sub(row[b], p, j);
        // elements 0-15 and 16-31 as int32, then s·q − c
        const __m512i q0 = T::kSignedQ ? _mm512_cvtepi8_epi32(_mm256_castsi256_si128(s.q))
                                       : _mm512_cvtepu8_epi32(_mm256_castsi256_si128(s.q));
        const __m512i q1 = T::kSignedQ ? _mm512_cvtepi8_epi32(_mm256_extracti128_si256(s.q, 1))
                                       : _mm512_cvtepu8_epi32(_mm256_extracti128_si256(s.q, 1));
        const __m512 v0 = _mm512_fmsub_ps(_mm512_cvtepi32_ps(q0), _mm512_set1_ps(s.s0), _mm512_set1_ps(s.c0));
        const __m512 v1 = _mm512_fmsub_ps(_mm512_cvtepi32_ps(q1), _mm512_set1_ps(s.s1), _mm512_set1_ps(s.c1));
        const __m512bh h = _mm512_cvtne2ps_pbh(v1, v0);
        _mm512_storeu_si512(o + (b * T::kSub + j) * kQK, reinterpret_cast<const __m512i&>(h));
      }
    }
  }
}
#endif

}  // namespace
}  // namespace headwise::kernels::quant
