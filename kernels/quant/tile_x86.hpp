// Register-tiled products of the int8 weight types for many input rows (prefill):
// RW weight rows × RA input rows per tile (RW = D::kTileW: 4 with AVX-512VL's 32
// registers, 2 with AVX2's 16; RA = 4), so each unpacked weight sub-block feeds RA dot
// products and each input block RW of them. Per 32-element sub-block and pair: one
// 8-bit dot (D::dot_acc) started from the input's offset correction, one int → float,
// one scale multiply, one multiply-add. The offset of Q8_0 (VNNI: +128), Q4_0 (8) and
// Q6_K (32) is uniform, so −offset·Σx is computed once per input sub-block as an
// integer vector and used as the dot's starting accumulator (no scalar work per pair);
// Q4_K's per-sub-block mins are one vector multiply-add per pair and super-block
// (8 sub-blocks' dmin·m_j against x.d·Σx), subtracted in the same accumulator.
// Include only from a *_avx2.cpp / *_avx512.cpp file (after dot_x86.hpp).
#pragma once

#include <algorithm>
#include <type_traits>

#include "kernels/quant/dot_x86.hpp"

namespace headwise::kernels::quant {
namespace {

// One 32-element sub-block of weights, unpacked: unsigned levels q (signed for Q8_0
// without VNNI), per-lane scale ws (lanes 0-3 cover elements 0-15, 4-7 elements 16-31),
// and the offset corrections c0, c1 (result −= x.d·(c0·Σx₀..₁₅ + c1·Σx₁₆..₃₁)).
struct SubW {
  __m256i q;  // (tile(): kOffset is the integer offset every q carries, c0/c1 unused)
  __m256 ws;
  float c0, c1;
  float s0, s1;  // the scales of elements 0-15 and 16-31: x = s·q − c
};

template <class T>
using D_of = typename T::Dot;

// Whether T unpacks two blocks into one zmm itself (T::sub2).
template <class T, class = void>
struct HasSub2 : std::false_type {};
template <class T>
struct HasSub2<T, std::void_t<decltype(T::kSub2)>> : std::true_type {};

template <class D>
struct TQ8_0 {
  using Dot = D;
  using B = BlockQ8_0;
  static constexpr int kBlock = kQK, kSub = 1;
  static constexpr bool kSignedQ = !D::kWideU8;
  static constexpr int kOffset = D::kWideU8 ? 128 : 0;
  static constexpr bool kMins = false;
  static constexpr bool kCachePrep = false;
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
  static __m256i pair_acc(__m256i acc, __m256i q, __m256i x) {
    if constexpr (D::kWideU8) return D::dot_acc(acc, q, x);
    return D::dot_acc(acc, _mm256_abs_epi8(q), _mm256_sign_epi8(x, q));
  }
};

template <class D>
struct TQ4_0 {
  using Dot = D;
  static constexpr bool kSignedQ = false;
  static constexpr int kOffset = 8;
  static constexpr bool kMins = false;
  static constexpr bool kCachePrep = false;
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
  static __m256i pair_acc(__m256i acc, __m256i q, __m256i x) { return D::dot_acc(acc, q, x); }
#if defined(__AVX512F__) && defined(__AVX512BW__)
  static constexpr bool kSub2 = true;
  // Blocks b0, b1 unpacked into one zmm as two sub() would (tile_z): each block's 16
  // bytes broadcast to two 128-bit lanes, the high nibbles shifted down in lanes 1 and 3.
  static __m512i sub2(const B& b0, const B& b1) {
    const __m512i raw = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0.q)))),
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b1.q))), 1);
    constexpr long long k4 = 0x0004000400040004;  // 16-bit shift counts: 4 in lanes 1 and 3
    const __m512i shift = _mm512_set_epi64(k4, k4, 0, 0, k4, k4, 0, 0);
    return _mm512_and_si512(_mm512_srlv_epi16(raw, shift), _mm512_set1_epi8(0xF));
  }
#endif
};

template <class D>
struct TQ4_K {
  using Dot = D;
  static constexpr bool kSignedQ = false;
  static constexpr int kOffset = 0;
  static constexpr bool kMins = true;  // Prep::m: dmin·m_j per sub-block
  static constexpr bool kCachePrep = true;  // 16 scalar 6-bit decodes per block: worth caching
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
  static __m256i pair_acc(__m256i acc, __m256i q, __m256i x) { return D::dot_acc(acc, q, x); }
};

template <class D>
struct TQ6_K {
  using Dot = D;
  static constexpr bool kSignedQ = false;
  static constexpr int kOffset = 32;
  static constexpr bool kMins = false;
  static constexpr bool kCachePrep = false;
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
  static __m256i pair_acc(__m256i acc, __m256i q, __m256i x) { return D::dot_acc(acc, q, x); }
};

// y(m + a, n + r) for r < RW, a < RA.
template <class T, int RW, int RA>
void tile(const uint8_t* w, size_t rb, int64_t n, const uint8_t* xa, size_t ab, int m, int64_t K,
          float* y, int64_t ldy) {
  using B = typename T::B;
  __m256 acc[RW][RA];
  for (int r = 0; r < RW; ++r)
    for (int a = 0; a < RA; ++a) acc[r][a] = _mm256_setzero_ps();
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
    if constexpr (T::kMins) {  // − Σ_j dmin·m_j · x_j.d·Σx_j, the 8 sub-blocks in the 8 lanes
      for (int a = 0; a < RA; ++a) {
        alignas(32) float xs[8];
        const BlockQ8A* x = xr[a] + b * T::kSub;
        for (int j = 0; j < 8; ++j) xs[j] = x[j].d * float(x[j].sum[0] + x[j].sum[1]);
        const __m256 xsv = _mm256_load_ps(xs);
        for (int r = 0; r < RW; ++r) acc[r][a] = _mm256_fnmadd_ps(_mm256_loadu_ps(p[r].m), xsv, acc[r][a]);
      }
    }
    for (int j = 0; j < T::kSub; ++j) {
      SubW s[RW];
      for (int r = 0; r < RW; ++r) s[r] = T::sub(wr[r][b], p[r], j);
      for (int a = 0; a < RA; ++a) {
        const BlockQ8A& x = xr[a][b * T::kSub + j];
        const __m256i xv = load32(x.q);
        const __m256 xd = _mm256_set1_ps(x.d);
        // −offset·Σx per 4-element lane: the start of every row's dot with this block
        __m256i start = _mm256_setzero_si256();
        if constexpr (T::kOffset != 0)
          start = _mm256_sub_epi32(start, D_of<T>::dot(_mm256_set1_epi8(char(T::kOffset)), xv));
        for (int r = 0; r < RW; ++r)
          acc[r][a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(T::pair_acc(start, s[r].q, xv)), _mm256_mul_ps(s[r].ws, xd),
                                      acc[r][a]);
      }
    }
  }
  for (int a = 0; a < RA; ++a)
    for (int r = 0; r < RW; ++r) y[(m + a) * ldy + n + r] = hsum8(acc[r][a]);
}

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__)
// tile() on zmm vectors: sub-blocks in pairs (g, g + 1) — the two halves of one
// K-quant super-block's sub-block pair, or two consecutive Q8_0/Q4_0 blocks (a last odd
// block pairs with zeros) — so every dot, conversion and multiply-add covers 64
// elements. Same arithmetic per lane as tile(): the products of a pair, per sub-block.
template <class T, int RW, int RA>
void tile_z(const uint8_t* w, size_t rb, int64_t n, const uint8_t* xa, size_t ab, int m, int64_t K,
            float* y, int64_t ldy, const typename T::Prep* pre) {
  static_assert(D_of<T>::kWideU8, "VNNI only: every pair is a plain u8·s8 dot");
  using B = typename T::B;
  constexpr int S = T::kSub;
  static_assert(S == 1 || S % 2 == 0, "sub-blocks pair up within a block");
  __m512 acc[RW][RA];
  for (int r = 0; r < RW; ++r)
    for (int a = 0; a < RA; ++a) acc[r][a] = _mm512_setzero_ps();
  const B* wr[RW];
  for (int r = 0; r < RW; ++r) wr[r] = reinterpret_cast<const B*>(w + size_t(n + r) * rb);
  const BlockQ8A* xr[RA];
  for (int a = 0; a < RA; ++a) xr[a] = reinterpret_cast<const BlockQ8A*>(xa + size_t(m + a) * ab);
  const int64_t nb = K / T::kBlock;
  const SubW none = {_mm256_setzero_si256(), _mm256_setzero_ps(), 0, 0, 0, 0};
  for (int64_t b = 0; b < nb; b += (S == 1 ? 2 : 1)) {
    const bool two = S > 1 || b + 1 < nb;  // S == 1: blocks b and b + 1
    typename T::Prep p[RW], p1[RW];
    for (int r = 0; r < RW; ++r) {
      for (int o = 0; o < int(sizeof(B)) * (S == 1 ? 2 : 1); o += 64)
        ahead(reinterpret_cast<const uint8_t*>(wr[r] + b) + o);
      p[r] = pre ? pre[r * nb + b] : T::prep(wr[r][b]);
      if (S == 1 && two) p1[r] = T::prep(wr[r][b + 1]);
    }
    if constexpr (T::kMins) {  // as in tile(), in the low half
      for (int a = 0; a < RA; ++a) {
        alignas(32) float xs[8];
        const BlockQ8A* x = xr[a] + b * S;
        for (int j = 0; j < 8; ++j) xs[j] = x[j].d * float(x[j].sum[0] + x[j].sum[1]);
        const __m512 xsv = _mm512_zextps256_ps512(_mm256_load_ps(xs));
        for (int r = 0; r < RW; ++r)
          acc[r][a] = _mm512_fnmadd_ps(_mm512_zextps256_ps512(_mm256_loadu_ps(p[r].m)), xsv, acc[r][a]);
      }
    }
    for (int j = 0; j < S; j += 2) {
      __m512i wq[RW];
      __m512 ws[RW];
      for (int r = 0; r < RW; ++r) {
        if constexpr (HasSub2<T>::value) {
          if (two) {
            wq[r] = T::sub2(wr[r][b], wr[r][b + 1]);
            ws[r] = _mm512_insertf32x8(_mm512_set1_ps(p[r].d), _mm256_set1_ps(p1[r].d), 1);
            continue;
          }
        }
        const SubW s0 = T::sub(wr[r][b], p[r], j);
        const SubW s1 = S > 1 ? T::sub(wr[r][b], p[r], j + 1) : two ? T::sub(wr[r][b + 1], p1[r], 0) : none;
        wq[r] = _mm512_inserti64x4(_mm512_castsi256_si512(s0.q), s1.q, 1);
        ws[r] = _mm512_insertf32x8(_mm512_castps256_ps512(s0.ws), s1.ws, 1);
      }
      for (int a = 0; a < RA; ++a) {
        const BlockQ8A& x0 = xr[a][b * S + j];
        const BlockQ8A* x1 = two ? &xr[a][b * S + j + 1] : nullptr;
        const __m512i xv = _mm512_inserti64x4(_mm512_castsi256_si512(load32(x0.q)),
                                              x1 ? load32(x1->q) : _mm256_setzero_si256(), 1);
        const __m512 xd = _mm512_insertf32x8(_mm512_set1_ps(x0.d), _mm256_set1_ps(x1 ? x1->d : 0.0f), 1);
        __m512i start = _mm512_setzero_si512();
        if constexpr (T::kOffset != 0)
          start = _mm512_sub_epi32(start, _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                                              _mm512_set1_epi8(char(T::kOffset)), xv));
        for (int r = 0; r < RW; ++r)
          acc[r][a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, wq[r], xv)),
                                      _mm512_mul_ps(ws[r], xd), acc[r][a]);
      }
    }
  }
  for (int a = 0; a < RA; ++a)
    for (int r = 0; r < RW; ++r) y[(m + a) * ldy + n + r] = _mm512_reduce_add_ps(acc[r][a]);
}
#endif

// tile() or, with AVX512-VNNI, tile_z().
template <class T, int RW, int RA>
void tile_any(const uint8_t* w, size_t rb, int64_t n, const uint8_t* xa, size_t ab, int m, int64_t K,
              float* y, int64_t ldy, const typename T::Prep* pre) {
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__)
  if constexpr (D_of<T>::kZmm) {
    tile_z<T, RW, RA>(w, rb, n, xa, ab, m, K, y, ldy, pre);
    return;
  }
#endif
  (void)pre;
  tile<T, RW, RA>(w, rb, n, xa, ab, m, K, y, ldy);
}

constexpr int kTileA = 4;
constexpr int kChunkA = 64;  // input rows per pass over the weights: 64 rows of K ≤ 8192 stay in L2

template <class T, int RW>
void tile_rows(const uint8_t* w, size_t rb, int64_t n, const uint8_t* xa, size_t ab, int m, int ra,
               int64_t K, float* y, int64_t ldy, const typename T::Prep* pre) {
  switch (ra) {
    case 1: tile_any<T, RW, 1>(w, rb, n, xa, ab, m, K, y, ldy, pre); break;
    case 2: tile_any<T, RW, 2>(w, rb, n, xa, ab, m, K, y, ldy, pre); break;
    case 3: tile_any<T, RW, 3>(w, rb, n, xa, ab, m, K, y, ldy, pre); break;
    default: tile_any<T, RW, kTileA>(w, rb, n, xa, ab, m, K, y, ldy, pre); break;
  }
}

// The GemvFn of an int8 type: inputs in chunks of kChunkA rows, weights in groups of
// D::kTileW rows (the last group of a range may be narrower), tiles of kTileW × kTileA.
template <class T>
void gemm_tiled(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab, int M,
                int64_t K, float* y, int64_t ldy) {
  constexpr int TW = D_of<T>::kTileW;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(xa);
  // Q4_K's per-block scales and mins (Prep: 16 scalars decoded from packed 6-bit fields)
  // are decoded once per weight-row group and input chunk, not once per input tile
  // (quant_bench prefill/q4_K/avx512: 1.4× faster; Q6_K's plain int8 scales are cheaper
  // to decode again than to copy, Q8_0/Q4_0 have one).
  constexpr int kMaxPrepBlocks = 64;  // K ≤ 16384 for blocks of 256: 16 KiB of stack
  typename T::Prep pre[T::kCachePrep ? TW * kMaxPrepBlocks : 1];
  const int64_t nb = K / T::kBlock;
  const bool use_pre = D_of<T>::kZmm && T::kCachePrep && nb <= kMaxPrepBlocks;
  for (int m0 = 0; m0 < M; m0 += kChunkA) {
    const int m1 = std::min(M, m0 + kChunkA);
    for (int64_t n = n0; n < n1; n += TW) {
      const int64_t rw = std::min<int64_t>(TW, n1 - n);
      if (use_pre)
        for (int64_t r = 0; r < rw; ++r)
          for (int64_t b = 0; b < nb; ++b)
            pre[r * nb + b] = T::prep(reinterpret_cast<const typename T::B*>(wb + size_t(n + r) * rb)[b]);
      const typename T::Prep* pp = use_pre ? pre : nullptr;
      for (int m = m0; m < m1; m += kTileA) {
        const int ra = std::min(kTileA, m1 - m);
        if (rw == TW) tile_rows<T, TW>(wb, rb, n, xb, ab, m, ra, K, y, ldy, pp);
        else if (rw == 3) tile_rows<T, 3>(wb, rb, n, xb, ab, m, ra, K, y, ldy, pp);
        else if (rw == 2) tile_rows<T, 2>(wb, rb, n, xb, ab, m, ra, K, y, ldy, pp);
        else tile_rows<T, 1>(wb, rb, n, xb, ab, m, ra, K, y, ldy, pp);
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
