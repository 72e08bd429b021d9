// The fused prefill attention body on AMX (Intel's tile unit: TDPBF16PS multiplies a
// 16 × 32 bf16 tile by a 32 × 16 one into 16 × 16 fp32, 8192 multiply-adds in one
// instruction), for the amx lines of attention.inc. The online softmax and the tiling are
// those of attn_fwd_impl.hpp (a tile of QT queries meets the keys KT at a time; only a
// KT × QT score tile and a running max, sum and accumulator per query exist); the two
// products run on tiles, the softmax and the conversions on AVX-512.
//
// Precision — split bf16. Every operand x is held as hi + lo, hi = bf16(x) (nearest) and
// lo = bf16(x − hi), and a product of two takes several tile products (fp32
// accumulators): Q·K all four of hi·hi, lo·hi, hi·lo, lo·lo; P·V the first three. An f16
// or bf16 element is exactly hi + lo (11 and 8 significant bits ≤ 16); Q and P are to
// within 2⁻¹⁷ of themselves; the dropped lo·lo of P·V is below 2⁻¹⁶ of the term. So a
// score carries about 2⁻¹⁷ relative error per term and an output about 2⁻¹⁷ · max|V|
// (P's rounding), against fp32's 2⁻²⁴: far below what the 16-bit cache itself rounds K
// and V to (2⁻⁹ bf16, 2⁻¹² f16), and 16× finer than llama.cpp's f16 Q·K (Q rounded to
// f16, 2⁻¹¹). tests/kernels/attention_test.cpp holds these lines to 2e-5 · max|V|
// (every other line to 1e-5). Plain bf16, one product, would carry 2⁻⁸ per term: too
// coarse for scores that feed an exponential. With a bf16 cache K and V have no lo part
// and the products are two. There is no fp32-cache line: that cache is the exact choice
// (attention.inc).
//
// Layout — keys in rows, queries in columns, as in the fp32 body:
//   Sᵀ (KT, QT) = K · Qᵀ   A tiles: K rows (16 keys × 32 features), converted per key tile;
//                           B tiles: Qᵀ in pairs of features, packed once per query tile
//   Otᵀ (D, QT) += Vᵀ · Pᵀ  A tiles: Vᵀ (16 features × 32 keys), transposed per key tile;
//                           B tiles: Pᵀ in pairs of keys (interleaving two rows of Sᵀ)
// so every softmax statistic is a vertical vector op over 16 queries, as in
// attn_fwd_impl.hpp. Both products run in 2 × 2 blocks of 16 × 16 accumulators
// (tmm0-3) fed by two A (tmm4/5) and two B (tmm6/7) tiles, the split's parts being
// extra steps along the sum (step2x2).
//
// Where the time goes (an Intel Xeon with AMX, 2 threads, 12 heads × 64, 2048 causal
// tokens, bf16 cache, 2026-12-05): the tile products ~45%, the softmax ~25%, the K/V/P
// conversions ~30%. The query tile is 128 (the K/V conversions are paid once per 128
// queries: 64 measured 1.3× slower); a 128- or 256-key tile measured the same as 64.
// Against the avx512 line, same run: f16 1.6×, bf16 1.75× at 2048 tokens; 1.3-1.5× at
// 512, where each query tile sees fewer key tiles.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention/attention.hpp"
#include "kernels/simd/amx_tiles.hpp"
#include "kernels/simd/half.hpp"
#include "kernels/simd/simd_xsimd.hpp"

namespace headwise::kernels {
namespace {

inline __m512 bf16_lo_half(__m512i h) {  // lanes 0..15 of 32 bf16, widened
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
}
inline __m512 bf16_hi_half(__m512i h) {  // lanes 16..31
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
}

// 32 values (x0: lanes 0..15, x1: lanes 16..31) as bf16 hi and lo.
inline void split_bf16(__m512 x0, __m512 x1, __m512i* hi, __m512i* lo) {
  const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
  *hi = h;
  *lo = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, bf16_hi_half(h)), _mm512_sub_ps(x0, bf16_lo_half(h)));
}

// r[i][j] -> r[j][i] for 16 vectors of 16 dwords.
inline void transpose16x16(__m512i* r) {
  __m512i a[16], b[16];
  for (int k = 0; k < 8; ++k) {
    a[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k) {  // b[4k + c], 128-bit lane L: rows 4k..4k+3 of column 4L + c
    b[4 * k + 0] = _mm512_unpacklo_epi64(a[4 * k], a[4 * k + 2]);
    b[4 * k + 1] = _mm512_unpackhi_epi64(a[4 * k], a[4 * k + 2]);
    b[4 * k + 2] = _mm512_unpacklo_epi64(a[4 * k + 1], a[4 * k + 3]);
    b[4 * k + 3] = _mm512_unpackhi_epi64(a[4 * k + 1], a[4 * k + 3]);
  }
  for (int c = 0; c < 4; ++c) {  // the 4 × 4 transpose of 128-bit lanes
    const __m512i e0 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0x44);
    const __m512i e1 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0xEE);
    const __m512i e2 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0x44);
    const __m512i e3 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0xEE);
    r[c] = _mm512_shuffle_i32x4(e0, e2, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(e0, e2, 0xDD);
    r[8 + c] = _mm512_shuffle_i32x4(e1, e3, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(e1, e3, 0xDD);
  }
}

inline __mmask32 first_lanes32(int n) { return n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1; }

// Elements [0, n) of a row (n ≤ 32) widened to fp32, zeros past n.
template <class E>
inline void load32(const typename E::T* p, int n, __m512* x0, __m512* x1) {
  const __mmask32 m = first_lanes32(n);
  if constexpr (std::is_same_v<E, KvF32>) {  // the queries
    *x0 = _mm512_maskz_loadu_ps(__mmask16(m), p);
    *x1 = _mm512_maskz_loadu_ps(__mmask16(m >> 16), p + 16);
  } else {
    const __m512i h = _mm512_maskz_loadu_epi16(m, p);
    if constexpr (std::is_same_v<E, KvF16>) {
      *x0 = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
      *x1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
    } else {
      *x0 = bf16_lo_half(h);
      *x1 = bf16_hi_half(h);
    }
  }
}

// Elements [0, n) of a row (n ≤ 16) widened to fp32, zeros past n.
template <class E>
inline __m512 load16(const typename E::T* p, int n) {
  const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
  if constexpr (std::is_same_v<E, KvF32>) return _mm512_maskz_loadu_ps(m, p);
  else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if constexpr (std::is_same_v<E, KvF16>) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <class E, int QT, int KT>
struct AttnFwdAmx {
  static_assert(QT % 32 == 0, "query tiles of whole 2 × 2 accumulator blocks");
  static_assert(KT % 32 == 0, "key tiles of whole 32-key Pᵀ tiles");
  using S = simd::F32<xsimd::avx512bw>;
  using V = S::V;
  using T = typename E::T;
  static constexpr int NC = QT / 16;  // 16-query columns
  static constexpr bool kLo = !std::is_same_v<E, KvBf16>;  // K and V have a lo part
  static constexpr int kTile = 512;  // bf16 elements per tile (16 rows × 32)
  static constexpr int kParts = kLo ? 2 : 1;  // hi (and lo) parts of a packed K or V tile

  // One step of a 2 × 2 block of accumulators: tmm0 = (a0, b0), tmm1 = (a0, b1),
  // tmm2 = (a1, b0), tmm3 = (a1, b1). Each loaded tile feeds two products and the four
  // products go to four accumulators: tile registers are not renamed, so a product that
  // waits on the previous one's accumulator, or a load into a tile a product still reads,
  // stalls for the product's whole latency (one accumulator per 16-query column, its
  // three split products back to back, ran at a third of this rate).
  static inline void step2x2(const uint16_t* a0, const uint16_t* a1, const uint16_t* b0, const uint16_t* b1) {
    _tile_loadd(4, a0, 64);
    _tile_loadd(5, a1, 64);
    _tile_loadd(6, b0, 64);
    _tile_loadd(7, b1, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  // The split products as extra steps along the sum, part → (A hi/lo, B hi/lo).
  // Sᵀ = K·Qᵀ takes all four, lo·lo included: scores feed an exponential, and with it a
  // score's error is Q's and K's rounding alone (2⁻¹⁷ each), half of what three parts
  // leave; its cost did not show in the timings. Otᵀ = Vᵀ·Pᵀ takes hi·hi, lo·hi, hi·lo.
  // A bf16 cache's K and V have no lo part: two steps each.
  static constexpr int kQkParts = kLo ? 4 : 2;
  static constexpr int qk_a(int part) { return kLo ? part & 1 : 0; }
  static constexpr int qk_b(int part) { return kLo ? part >> 1 : part; }
  static constexpr int kPvParts = kLo ? 3 : 2;
  static constexpr int pv_a(int part) { return kLo && part == 1 ? 1 : 0; }
  static constexpr int pv_b(int part) { return part == kPvParts - 1 ? 1 : 0; }

  // The 2 × 2 accumulators to and from fp32 rows: row block r, column block c at
  // c0 + r·16 rows + c·16 columns.
  static inline void store2x2(float* c0, int64_t row_floats) {
    const int64_t sb = row_floats * sizeof(float);
    _tile_stored(0, c0, sb);
    _tile_stored(1, c0 + 16, sb);
    _tile_stored(2, c0 + 16 * row_floats, sb);
    _tile_stored(3, c0 + 16 * row_floats + 16, sb);
  }
  static inline void load2x2(const float* c0, int64_t row_floats) {
    const int64_t sb = row_floats * sizeof(float);
    _tile_loadd(0, c0, sb);
    _tile_loadd(1, c0 + 16, sb);
    _tile_loadd(2, c0 + 16 * row_floats, sb);
    _tile_loadd(3, c0 + 16 * row_floats + 16, sb);
  }

  // One key tile's A tiles, as run() reads them. K at Ka: tile (hl, kb, s) — part hl
  // (0 hi, 1 lo), keys kb·16 .., features s·32 ... Vᵀ at Va: tile (hl, db, ks) — features
  // db·16 .., keys ks·32 ... Each part of either is KT × D32 elements.
  template <class U>  // uint16_t or const uint16_t
  static U* ka(U* Ka, int hl, int kb, int s, int NS) {
    return Ka + ((size_t(hl) * (KT / 16) + kb) * NS + s) * kTile;
  }
  template <class U>
  static U* va(U* Va, int hl, int db, int ks, int NDB) {
    return Va + ((size_t(hl) * NDB + db) * (KT / 32) + ks) * kTile;
  }

  // Keys k0 .. k0 + nk − 1 of (b, hk) converted into those tiles, zeros past nk up to
  // the whole 32-key steps that cover it (the products read no further).
  static void convert_kv(const AttnProblem& p, int b, int hk, int k0, int nk, uint16_t* Ka, uint16_t* Va) {
    const int D = p.head_dim;
    const int NS = (D + 31) / 32, NDB = NS * 2;
    const int nks = (nk + 31) / 32, nkb = 2 * nks;
    auto ka = [&](uint16_t* base, int hl, int kb, int s) { return AttnFwdAmx::ka(base, hl, kb, s, NS); };
    auto va = [&](uint16_t* base, int hl, int db, int ks) { return AttnFwdAmx::va(base, hl, db, ks, NDB); };
    // K as A tiles: tile (kb, s) row i holds features s·32 .. s·32 + 31 of key kb·16 + i.
    for (int kb = 0; kb < nkb; ++kb)
      for (int i = 0; i < 16; ++i) {
        const int j = kb * 16 + i;
        const T* row = j < nk ? p.k.at<T>(b, k0 + j, hk) : nullptr;
        for (int s = 0; s < NS; ++s) {
          __m512i hi = _mm512_setzero_si512(), lo = _mm512_setzero_si512();
          if (row) {
            if constexpr (!kLo) {
              hi = _mm512_maskz_loadu_epi16(first_lanes32(D - s * 32), row + s * 32);
            } else {
              __m512 x0, x1;
              load32<E>(row + s * 32, D - s * 32, &x0, &x1);
              split_bf16(x0, x1, &hi, &lo);
            }
          }
          _mm512_store_si512(ka(Ka, 0, kb, s) + i * 32, hi);
          if constexpr (kLo) _mm512_store_si512(ka(Ka, 1, kb, s) + i * 32, lo);
        }
      }
    // Vᵀ as A tiles: tile (db, ks) row d holds feature db·16 + d of keys ks·32 .. +31.
    for (int ks = 0; ks < nks; ++ks)
      for (int db = 0; db < NDB; ++db) {
        __m512i half[2][16];
        for (int h = 0; h < 2; ++h) {
          for (int i = 0; i < 16; ++i) {
            const int j = ks * 32 + h * 16 + i;
            half[h][i] = j < nk && db * 16 < D
                             ? _mm512_castps_si512(load16<E>(p.v.at<T>(b, k0 + j, hk) + db * 16, D - db * 16))
                             : _mm512_setzero_si512();
          }
          transpose16x16(half[h]);
        }
        for (int d = 0; d < 16; ++d) {
          const __m512 x0 = _mm512_castsi512_ps(half[0][d]), x1 = _mm512_castsi512_ps(half[1][d]);
          if constexpr (!kLo) {
            _mm512_store_si512(va(Va, 0, db, ks) + d * 32, (__m512i)_mm512_cvtne2ps_pbh(x1, x0));  // exact
          } else {
            __m512i hi, lo;
            split_bf16(x0, x1, &hi, &lo);
            _mm512_store_si512(va(Va, 0, db, ks) + d * 32, hi);
            _mm512_store_si512(va(Va, 1, db, ks) + d * 32, lo);
          }
        }
      }
  }

  // AttnKernel::pack: key tile k0 of (b, hk), every key of it that exists, into `tile`
  // (amx_packed_tile_floats(): K's parts, then Vᵀ's). run() reads it in place of its own
  // conversion wherever that conversion would be the same (the tile's keys all visible
  // or its last keys the sequence's last), so results do not depend on packing.
  static void pack(const AttnProblem& p, int b, int hk, int k0, uint16_t* tile) {
    const size_t part = size_t(KT) * ((p.head_dim + 31) / 32 * 32);
    convert_kv(p, b, hk, k0, std::min(KT, p.kv_end(b) - k0), tile, tile + kParts * part);
  }

  static void run(const AttnProblem& p, int b, int hq, int q0, float* scratch, const AttnPackedKv* packed) {
    const int D = p.head_dim;
    const int D32 = (D + 31) / 32 * 32;
    const int NS = D32 / 32, NDB = D32 / 16;  // 32-feature steps, 16-feature blocks
    const int hk = hq / p.group();
    const int nq = std::min(QT, p.q_len - q0);
    assert(nq > 0);
    // The scratch, as amx_prefill_scratch_floats() counts it (every part a multiple of
    // 64 bytes long).
    uint16_t* Qb = reinterpret_cast<uint16_t*>(scratch);      // [hl][s][c] tiles
    float* Ot = scratch + size_t(D32) * QT;                     // (D32, QT)
    float* St = Ot + size_t(D32) * QT;                          // (KT, QT)
    float* m = St + size_t(KT) * QT;                            // (QT,) log2 units
    float* l = m + QT;                                          // (QT,)
    uint16_t* Ka = reinterpret_cast<uint16_t*>(l + QT);         // [hl][kb][s] tiles
    uint16_t* Va = Ka + size_t(2) * KT * D32;                   // [hl][db][ks] tiles
    uint16_t* Pb = Va + size_t(2) * D32 * KT;                   // [hl][ks][c] tiles
    auto qb = [&](int hl, int s) { return Qb + (size_t(hl) * NS + s) * NC * kTile; };
    // This key tile's K and Vᵀ tiles: converted into Ka/Va, or packed for the call.
    const uint16_t *Kt = Ka, *Vt = Va;
    auto ka = [&](int hl, int kb, int s) { return AttnFwdAmx::ka(Kt, hl, kb, s, NS); };
    auto va = [&](int hl, int db, int ks) { return AttnFwdAmx::va(Vt, hl, db, ks, NDB); };
    auto pb = [&](int hl, int ks) { return Pb + (size_t(hl) * (KT / 32) + ks) * NC * kTile; };

    // Live 16-query columns, in whole pairs: a short last tile skips the rest (their Qb,
    // Sᵀ, Pb and Ot columns are never read).
    const int ncl = std::min(NC, (nq + 31) / 32 * 2);

    // Qᵀ·scale·log2(e) as B tiles: tile (s, c) row j holds features s·32 + 2j, 2j + 1 of
    // the column's 16 queries, pairwise — a 16 × 16 transpose of pairs.
    const float c = p.scale * 1.4426950408889634f;
    const __m512 cv = _mm512_set1_ps(c);
    for (int col = 0; col < ncl; ++col)
      for (int s = 0; s < NS; ++s) {
        __m512i hi[16], lo[16];
        for (int i = 0; i < 16; ++i) {
          const int r = col * 16 + i;
          if (r >= nq) {
            hi[i] = lo[i] = _mm512_setzero_si512();
            continue;
          }
          __m512 x0, x1;
          load32<KvF32>(p.q.at(b, q0 + r, hq) + s * 32, D - s * 32, &x0, &x1);
          split_bf16(_mm512_mul_ps(x0, cv), _mm512_mul_ps(x1, cv), &hi[i], &lo[i]);
        }
        transpose16x16(hi);
        transpose16x16(lo);
        for (int j = 0; j < 16; ++j) {
          _mm512_store_si512(qb(0, s) + col * kTile + j * 32, hi[j]);
          _mm512_store_si512(qb(1, s) + col * kTile + j * 32, lo[j]);
        }
      }
    for (size_t i = 0; i < size_t(D32) * QT; ++i) Ot[i] = 0.0f;
    for (int r = 0; r < QT; ++r) m[r] = -INFINITY, l[r] = 0.0f;

    const int q_pos0 = p.causal_offset() + q0;
    const int kseq = p.kv_end(b);
    const int kend = p.causal ? std::min(kseq, q_pos0 + nq) : kseq;
    const int kpacked = packed ? packed->keys : 0;

    amx_configure();
    for (int k0 = 0; k0 < kend; k0 += KT) {
      const int nk = std::min(KT, kend - k0);
      const int nks = (nk + 31) / 32, nkb = 2 * nks;  // whole 32-key steps
      if (k0 + KT < kend && k0 + KT >= kpacked)
        prefetch_kv_rows<T>(p, b, hk, k0 + KT, std::min(KT, kend - k0 - KT));
      // The packed tile holds keys up to min(k0 + KT, kseq), the conversion keys up to
      // k0 + nk (causal: this query tile's last) and zeros after: the same tiles where
      // nk reaches either end, so packing changes no result, not even a zero's sign.
      if (k0 < kpacked && nk == std::min(KT, kseq - k0)) {
        Kt = packed->tile(b, hk, k0 / KT);
        Vt = Kt + kParts * size_t(KT) * D32;
      } else {
        Kt = Ka, Vt = Va;
        convert_kv(p, b, hk, k0, nk, Ka, Va);
      }
      amx_fence();

      // Sᵀ = K · Qᵀ, 32 keys × 32 queries at a time.
      for (int col = 0; col < ncl; col += 2)
        for (int kb = 0; kb < nkb; kb += 2) {
          // Keys all past the pair's last query (causal): every score is masked below.
          if (p.causal && k0 + kb * 16 > q_pos0 + col * 16 + 31) continue;
          _tile_zero(0);
          _tile_zero(1);
          _tile_zero(2);
          _tile_zero(3);
          for (int s = 0; s < NS; ++s)
            for (int part = 0; part < kQkParts; ++part) {
              const uint16_t* b0 = qb(qk_b(part), s) + col * kTile;
              step2x2(ka(qk_a(part), kb, s), ka(qk_a(part), kb + 1, s), b0, b0 + kTile);
            }
          store2x2(St + size_t(kb) * 16 * QT + col * 16, QT);
        }

      // Causal mask: key k0 + j is hidden from query lane r when k0 + j > q_pos0 + r.
      if (p.causal && k0 + nk - 1 > q_pos0) {
        for (int j = 0; j < nk; ++j) {
          const int bound = k0 + j - q_pos0;  // lanes r < bound are hidden
          for (int v = 0; v < ncl && v * 16 < bound; ++v) {
            const int n = std::min(16, bound - v * 16);
            float* s = St + j * QT + v * 16;
            const __mmask16 hide = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
            _mm512_store_ps(s, _mm512_mask_mov_ps(_mm512_load_ps(s), hide, _mm512_set1_ps(-INFINITY)));
          }
        }
      }

      // Online softmax per query lane (attn_fwd_impl.hpp's step 3); P overwrites Sᵀ.
      __m512 alpha[NC];
      for (int v = 0; v < ncl; ++v) {
        // Causal: keys from k0 + live on are hidden from all 16 queries of v: P = 0 there
        // without the exponential (half of a diagonal tile's scores).
        const int live = p.causal ? std::clamp(q_pos0 + v * 16 + 16 - k0, 0, nk) : nk;
        __m512 mx = _mm512_load_ps(m + v * 16);
        for (int j = 0; j < live; ++j) mx = _mm512_max_ps(mx, _mm512_load_ps(St + j * QT + v * 16));
        const __m512 mref = _mm512_max_ps(mx, _mm512_set1_ps(-3.0e38f));
        __m512 sum = _mm512_setzero_ps();
        for (int j = 0; j < live; ++j) {
          float* s = St + j * QT + v * 16;
          const __m512 pj = S::exp2(V(_mm512_sub_ps(_mm512_load_ps(s), mref)));
          _mm512_store_ps(s, pj);
          sum = _mm512_add_ps(sum, pj);
        }
        for (int j = live; j < nk; ++j) _mm512_store_ps(St + j * QT + v * 16, _mm512_setzero_ps());
        alpha[v] = S::exp2(V(_mm512_sub_ps(_mm512_load_ps(m + v * 16), mref)));
        _mm512_store_ps(l + v * 16, _mm512_fmadd_ps(alpha[v], _mm512_load_ps(l + v * 16), sum));
        _mm512_store_ps(m + v * 16, mx);
      }

      // Pᵀ as B tiles: tile (ks, c) row j holds keys ks·32 + 2j and 2j + 1 of the
      // column's 16 queries, interleaved; keys past nk are zeros.
      const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                                  23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
      for (int ks = 0; ks < nks; ++ks)
        for (int col = 0; col < ncl; ++col)
          for (int j = 0; j < 16; ++j) {
            const int j0 = ks * 32 + 2 * j;
            const __m512 x0 = j0 < nk ? _mm512_load_ps(St + j0 * QT + col * 16) : _mm512_setzero_ps();
            const __m512 x1 = j0 + 1 < nk ? _mm512_load_ps(St + (j0 + 1) * QT + col * 16) : _mm512_setzero_ps();
            __m512i hi, lo;
            split_bf16(x0, x1, &hi, &lo);
            _mm512_store_si512(pb(0, ks) + col * kTile + j * 32, _mm512_permutexvar_epi16(interleave, hi));
            _mm512_store_si512(pb(1, ks) + col * kTile + j * 32, _mm512_permutexvar_epi16(interleave, lo));
          }

      // Otᵀ = α ⊙ Otᵀ + Vᵀ · Pᵀ. A column whose 16 maxima all stayed (α = 1 exactly, as
      // most are once a query has seen its largest scores) is left as it is: the same
      // bits without a pass over it.
      for (int v = 0; v < ncl; ++v) {
        if (_mm512_cmpneq_ps_mask(alpha[v], _mm512_set1_ps(1.0f)) == 0) continue;
        for (int d = 0; d < D32; ++d)
          _mm512_store_ps(Ot + d * QT + v * 16, _mm512_mul_ps(_mm512_load_ps(Ot + d * QT + v * 16), alpha[v]));
      }
      amx_fence();
      for (int col = 0; col < ncl; col += 2)
        for (int db = 0; db < NDB; db += 2) {
          float* o = Ot + size_t(db) * 16 * QT + col * 16;
          // Causal: steps whose keys all lie past the pair's last query have P = 0.
          const int last = q_pos0 + col * 16 + 31 - k0;
          const int ks_end = !p.causal ? nks : last < 0 ? 0 : std::min(nks, last / 32 + 1);
          if (ks_end == 0) continue;
          load2x2(o, QT);
          for (int ks = 0; ks < ks_end; ++ks)
            for (int part = 0; part < kPvParts; ++part) {
              const uint16_t* b0 = pb(pv_b(part), ks) + col * kTile;
              step2x2(va(pv_a(part), db, ks), va(pv_a(part), db + 1, ks), b0, b0 + kTile);
            }
          store2x2(o, QT);
        }
    }
    _tile_release();

    // O(q0 + r, :) = Ot(:, r) / l(r); a query that saw no key (l = 0) gets zeros.
    for (int r0 = 0; r0 < nq; r0 += 16) {
      float* orow[16];
      float inv[16];
      for (int i = 0; i < 16; ++i) {
        const int r = r0 + i;
        orow[i] = r < nq ? p.o.at(b, q0 + r, hq) : nullptr;
        inv[i] = r < nq && l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      }
      for (int d = 0; d < D; d += 16) {
        __m512i blk[16];
        for (int i = 0; i < 16; ++i) blk[i] = _mm512_load_si512(Ot + (d + i) * QT + r0);
        transpose16x16(blk);
        const int n = std::min(16, D - d);
        const __mmask16 keep = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
        for (int i = 0; i < 16; ++i)
          if (orow[i])
            _mm512_mask_storeu_ps(orow[i] + d, keep,
                                  _mm512_mul_ps(_mm512_castsi512_ps(blk[i]), _mm512_set1_ps(inv[i])));
      }
    }
  }
};

}  // namespace
}  // namespace headwise::kernels
