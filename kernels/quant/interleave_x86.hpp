// Q4_0 and Q8_0 products on row-interleaved panels (layout: interleave.hpp), the x86
// linear-registry entries of these types (q4_0_avx512.cpp, q4_0_avx2.cpp, q8_0_*).
//
// Why: on the stored layout (one row at a time, as the x86 GGUF-row kernels, since
// removed, read it) every 32-element block of every row costs a scalar f16 conversion,
// a scale multiply, a broadcast, a horizontal sum per row and a scalar offset
// correction: decode was bound by that work, not by the bytes (Q4_0: 32% of the read
// bandwidth). On a panel of 8 rows one block of all 8 is: the quant vectors (Q4_0: 4
// loads, unpacked to 8 nibble vectors), 8 int8 dot products against the input's 4-byte
// groups broadcast to every lane (vpdpbusd; AVX2: vpmaddubsw summed in 16 bits, one
// vpmaddwd), the int32 sums started at the type's offset correction (−8·Σx for Q4_0,
// −128·Σx for Q8_0 on VNNI, precomputed per input block), then ONE int → float, ONE
// vcvtph2ps of the 8 rows' scales, one multiply by the input block's scale and ONE
// multiply-add into the 8 rows' sums.
//
// Prefill reads the same copy: a tile of one panel × up to panel_tile_a() input rows, each
// unpacked weight vector feeding every input row; a thread takes whole panels, inputs in
// chunks of kPanelChunkA rows (they stay in L2, the panel in L1).
// AVX-512 (VNNI) runs two panels side by side in zmm vectors, decode and prefill: this
// CPU (Zen 4) executes zmm at the 256-bit rate, but the loops were bound by instruction
// count, which this halves.
// Measured (quant_bench, one thread, loaded 2-core Zen 4; stored-layout kernels, since
// removed, in brackets): decode_projection/q4_0/avx512 (K 4096 × N 8192) 0.37-0.47 ms
// (1.30), q8_0 0.87-1.15 ms (1.12-1.24); projection/q4_0/avx512 (128 rows, 2048²)
// ~360-430 GFLOP/s (117-160), q8_0 ~360-400 (132); the int8 peak is ~846 GOP/s per core.
// AVX2: q4_0 decode 0.62-0.84 ms (1.41-1.46), prefill ~165-172 GFLOP/s (70); q8_0 prefill
// ~120 (71-89) but decode 1.50-1.66 ms (1.30-1.41), slower by a cause not found yet
// (fewer instructions per row-block than the stored layout's loop; an open question).
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include <algorithm>

#include "kernels/matmul/linear.hpp"
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/fma_tile_avx2.hpp"
#include "kernels/quant/interleave.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {
namespace {

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Q4_0: 16 quant bytes per row and block; the 8 nibble vectors of a block of a panel.
template <class D>
struct PanelQ4_0 {
  static constexpr int kQB = 16;
  static constexpr uint8_t kFlip = 0;
  static constexpr int kOffset = 8;  // x = d·(q − 8)
  static constexpr bool kZmm = D::kZmm;
  static constexpr bool kWide = D::kWideU8;
  static constexpr bool kDecodePairs = true;  // decode: two blocks per step
  struct W { __m256i v[8]; };  // v[i]: elements 4i..4i+3 (i < 4), 16 + 4(i − 4).. (i ≥ 4)
  static W unpack(const uint8_t* q) {
    const __m256i m = _mm256_set1_epi8(0xF);
    W w;
    for (int i = 0; i < 4; ++i) {
      const __m256i raw = load32(q + 32 * i);
      w.v[i] = _mm256_and_si256(raw, m);
      w.v[4 + i] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m);
    }
    return w;
  }
  // acc + Σ q·x per row (lane).
  static __m256i dot(const W& w, const BlockQ8A& x, __m256i acc) {
    if constexpr (D::kWideU8) {  // two dependency chains of 4
      __m256i acc1 = _mm256_setzero_si256();
      for (int i = 0; i < 4; ++i) acc = D::dot_acc(acc, w.v[i], bcast4(x.q + 4 * i));
      for (int i = 0; i < 4; ++i) acc1 = D::dot_acc(acc1, w.v[4 + i], bcast4(x.q + 16 + 4 * i));
      return _mm256_add_epi32(acc, acc1);
    } else {
      // vpmaddubsw pairs are ≤ 2·15·127 = 3810 and 8 of them ≤ 30480 < 2¹⁵: summed in
      // 16 bits, widened once.
      __m256i s = _mm256_setzero_si256();
      for (int i = 0; i < 4; ++i) {
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w.v[i], bcast4(x.q + 4 * i)));
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w.v[4 + i], bcast4(x.q + 16 + 4 * i)));
      }
      return _mm256_add_epi32(acc, _mm256_madd_epi16(s, _mm256_set1_epi16(1)));
    }
  }
};

// Q8_0: 32 quant bytes per row and block. VNNI: stored as w + 128 (unsigned), offset
// 128; AVX2: signed, multiplied through the sign trick |w|·(x·sign w).
template <class D>
struct PanelQ8_0 {
  static constexpr int kQB = 32;
  static constexpr uint8_t kFlip = D::kWideU8 ? 0x80 : 0;
  static constexpr int kOffset = D::kWideU8 ? 128 : 0;
  static constexpr bool kZmm = D::kZmm;
  static constexpr bool kWide = D::kWideU8;
  static constexpr bool kDecodePairs = D::kWideU8;  // AVX2: two blocks' 16 vectors spill
  struct W { __m256i v[8]; };  // v[i]: elements 4i..4i+3
  static W unpack(const uint8_t* q) {
    W w;
    for (int i = 0; i < 8; ++i) w.v[i] = load32(q + 32 * i);
    return w;
  }
  static __m256i dot(const W& w, const BlockQ8A& x, __m256i acc) {
    if constexpr (D::kWideU8) {  // two dependency chains of 4
      __m256i acc1 = _mm256_setzero_si256();
      for (int i = 0; i < 8; i += 2) {
        acc = D::dot_acc(acc, w.v[i], bcast4(x.q + 4 * i));
        acc1 = D::dot_acc(acc1, w.v[i + 1], bcast4(x.q + 4 * i + 4));
      }
      acc = _mm256_add_epi32(acc, acc1);
    } else {
      // pairs ≤ 2·128·127 < 2¹⁵, but two of them may not be: widened per vector
      for (int i = 0; i < 8; ++i)
        acc = D::dot_acc(acc, _mm256_abs_epi8(w.v[i]), _mm256_sign_epi8(bcast4(x.q + 4 * i), w.v[i]));
    }
    return acc;
  }
};

inline __m256 panel_scales(const uint8_t* s, int64_t b) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16 * b)));
}

// The 8 rows' sums into y[0..rows) (rows < 8 only in the last panel).
inline void store_rows(float* y, __m256 v, int rows) {
  if (rows == kPanelRows) {
    _mm256_storeu_ps(y, v);
    return;
  }
  alignas(32) float t[kPanelRows];
  _mm256_store_ps(t, v);
  for (int r = 0; r < rows; ++r) y[r] = t[r];
}

// Input rows per prefill tile: its unpacked weights stay in registers (8 vectors) next
// to one sum per input row (32 zmm registers with AVX-512, 16 ymm with AVX2).
template <class P>
constexpr int panel_tile_a() { return P::kZmm ? 6 : 4; }
constexpr int kPanelChunkA = 64;  // input rows per pass over a thread's panels (they stay in L2)

// Panel p × inputs [m, m + RA): y(m + a, 8p + r). x rows ab bytes apart; st: each
// input's per-block starting sums (−offset·Σx), nb apart.
template <class P, int RA>
void panel_tile(const uint8_t* panels, int64_t nb, int64_t p, int64_t N, const uint8_t* xa, size_t ab,
                const int32_t* st, int m, float* y, int64_t ldy) {
  const size_t qstep = size_t(kPanelRows) * P::kQB;
  const uint8_t* q = panels + size_t(p) * panel_bytes(nb, P::kQB);
  const uint8_t* s = q + size_t(nb) * qstep;
  const BlockQ8A* x[RA];
  for (int a = 0; a < RA; ++a) x[a] = reinterpret_cast<const BlockQ8A*>(xa + size_t(m + a) * ab);
  __m256 acc[RA];
  for (int a = 0; a < RA; ++a) acc[a] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const typename P::W w = P::unpack(q + size_t(b) * qstep);
    const __m256 ws = panel_scales(s, b);
    for (int a = 0; a < RA; ++a) {
      const BlockQ8A& xb = x[a][b];
      const __m256i start = P::kOffset ? _mm256_set1_epi32(st[size_t(m + a) * nb + b]) : _mm256_setzero_si256();
      const __m256i d = P::dot(w, xb, start);
      acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(ws, _mm256_set1_ps(xb.d)), acc[a]);
    }
  }
  const int rows = int(std::min<int64_t>(kPanelRows, N - p * kPanelRows));
  for (int a = 0; a < RA; ++a) store_rows(y + (m + a) * ldy + p * kPanelRows, acc[a], rows);
}

// One input row (decode): as panel_tile<P, 1>, two blocks per step in two sums.
template <class P>
void panel_gemv(const uint8_t* panels, int64_t nb, int64_t p0, int64_t p1, int64_t N, const BlockQ8A* x,
                const int32_t* st, float* y) {
  const size_t pb = panel_bytes(nb, P::kQB), qstep = size_t(kPanelRows) * P::kQB;
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* q = panels + size_t(p) * pb;
    const uint8_t* s = q + size_t(nb) * qstep;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    auto one = [&](int64_t b, __m256 acc) {
      const __m256i start = P::kOffset ? _mm256_set1_epi32(st[b]) : _mm256_setzero_si256();
      const __m256i d = P::dot(P::unpack(q + size_t(b) * qstep), x[b], start);
      return _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(panel_scales(s, b), _mm256_set1_ps(x[b].d)), acc);
    };
    int64_t b = 0;
    if constexpr (P::kDecodePairs) {
      for (; b + 1 < nb; b += 2) {
        for (size_t o = 0; o < 2 * qstep; o += 64) ahead(q + size_t(b) * qstep + o);
        if ((b & 3) == 0) ahead(s + 16 * b);
        acc0 = one(b, acc0);
        acc1 = one(b + 1, acc1);
      }
    }
    for (; b < nb; ++b) {
      for (size_t o = 0; o < qstep; o += 64) ahead(q + size_t(b) * qstep + o);
      if ((b & 3) == 0) ahead(s + 16 * b);
      acc0 = one(b, acc0);
    }
    store_rows(y + p * kPanelRows, _mm256_add_ps(acc0, acc1), int(std::min<int64_t>(kPanelRows, N - p * kPanelRows)));
  }
}

#if defined(__AVX512F__) && defined(__AVX512VNNI__)
// AVX-512: panels p and p + 1 side by side in zmm vectors (16 rows per instruction:
// this CPU runs zmm at the 256-bit rate, so it halves the instruction count, not the
// arithmetic). Q4_0 / Q8_0 on VNNI only (every product a plain u8·s8 dot).
template <class P>
struct PanelZ {
  struct W { __m512i v[8]; };
  static __m512i load2(const uint8_t* q0, const uint8_t* q1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(q0)), load32(q1), 1);
  }
  static W unpack(const uint8_t* q0, const uint8_t* q1) {
    W w;
    if constexpr (P::kQB == 16) {
      const __m512i m = _mm512_set1_epi8(0xF);
      for (int i = 0; i < 4; ++i) {
        const __m512i raw = load2(q0 + 32 * i, q1 + 32 * i);
        w.v[i] = _mm512_and_si512(raw, m);
        w.v[4 + i] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m);
      }
    } else {
      for (int i = 0; i < 8; ++i) w.v[i] = load2(q0 + 32 * i, q1 + 32 * i);
    }
    return w;
  }
  static __m512i bcast(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
  // v[i] pairs with input bytes 4i.. (Q8_0) or, for Q4_0, 4i.. (i < 4) and 16 + 4(i − 4)..
  static __m512i dot(const W& w, const BlockQ8A& x, __m512i acc) {
    __m512i acc1 = _mm512_setzero_si512();
    for (int i = 0; i < 8; i += 2) {
      const int o0 = P::kQB == 16 ? (i < 4 ? 4 * i : 16 + 4 * (i - 4)) : 4 * i;
      acc = _mm512_dpbusd_epi32(acc, w.v[i], bcast(x.q + o0));
      acc1 = _mm512_dpbusd_epi32(acc1, w.v[i + 1], bcast(x.q + o0 + 4));
    }
    return _mm512_add_epi32(acc, acc1);
  }
  static __m512 scales(const uint8_t* s0, const uint8_t* s1, int64_t b) {
    const __m256i h = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s1 + 16 * b)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + 16 * b)));
    return _mm512_cvtph_ps(h);
  }
};

// Panels p, p + 1 × inputs [m, m + RA), as panel_tile.
template <class P, int RA>
void panel_tile_z(const uint8_t* panels, int64_t nb, int64_t p, int64_t N, const uint8_t* xa, size_t ab,
                  const int32_t* st, int m, float* y, int64_t ldy) {
  using Z = PanelZ<P>;
  const size_t qstep = size_t(kPanelRows) * P::kQB, pb = panel_bytes(nb, P::kQB);
  const uint8_t* q0 = panels + size_t(p) * pb;
  const uint8_t* q1 = q0 + pb;
  const uint8_t *s0 = q0 + size_t(nb) * qstep, *s1 = q1 + size_t(nb) * qstep;
  const BlockQ8A* x[RA];
  for (int a = 0; a < RA; ++a) x[a] = reinterpret_cast<const BlockQ8A*>(xa + size_t(m + a) * ab);
  __m512 acc[RA];
  for (int a = 0; a < RA; ++a) acc[a] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const typename Z::W w = Z::unpack(q0 + size_t(b) * qstep, q1 + size_t(b) * qstep);
    const __m512 ws = Z::scales(s0, s1, b);
    for (int a = 0; a < RA; ++a) {
      const BlockQ8A& xb = x[a][b];
      const __m512i d = Z::dot(w, xb, _mm512_set1_epi32(st[size_t(m + a) * nb + b]));
      acc[a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(ws, _mm512_set1_ps(xb.d)), acc[a]);
    }
  }
  const int rows = int(std::min<int64_t>(kPanelRows, N - (p + 1) * kPanelRows));
  for (int a = 0; a < RA; ++a) {
    _mm256_storeu_ps(y + (m + a) * ldy + p * kPanelRows, _mm512_castps512_ps256(acc[a]));
    store_rows(y + (m + a) * ldy + (p + 1) * kPanelRows, _mm512_extractf32x8_ps(acc[a], 1), rows);
  }
}

// One input row on pairs of panels (a last odd panel: panel_gemv), two blocks per step.
template <class P>
void panel_gemv_z(const uint8_t* panels, int64_t nb, int64_t p0, int64_t p1, int64_t N, const BlockQ8A* x,
                  const int32_t* st, float* y) {
  using Z = PanelZ<P>;
  const size_t pb = panel_bytes(nb, P::kQB), qstep = size_t(kPanelRows) * P::kQB;
  int64_t p = p0;
  for (; p + 1 < p1; p += 2) {
    const uint8_t* q0 = panels + size_t(p) * pb;
    const uint8_t* q1 = q0 + pb;
    const uint8_t *s0 = q0 + size_t(nb) * qstep, *s1 = q1 + size_t(nb) * qstep;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    auto one = [&](int64_t b, __m512 acc) {
      const __m512i d = Z::dot(Z::unpack(q0 + size_t(b) * qstep, q1 + size_t(b) * qstep), x[b], _mm512_set1_epi32(st[b]));
      return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(Z::scales(s0, s1, b), _mm512_set1_ps(x[b].d)), acc);
    };
    int64_t b = 0;
    for (; b + 1 < nb; b += 2) {
      for (size_t o = 0; o < 2 * qstep; o += 64) {
        ahead_far(q0 + size_t(b) * qstep + o);
        ahead_far(q1 + size_t(b) * qstep + o);
      }
      if ((b & 3) == 0) {
        ahead_far(s0 + 16 * b);
        ahead_far(s1 + 16 * b);
      }
      acc0 = one(b, acc0);
      acc1 = one(b + 1, acc1);
    }
    if (b < nb) acc0 = one(b, acc0);
    const __m512 v = _mm512_add_ps(acc0, acc1);
    _mm256_storeu_ps(y + p * kPanelRows, _mm512_castps512_ps256(v));
    store_rows(y + (p + 1) * kPanelRows, _mm512_extractf32x8_ps(v, 1),
               int(std::min<int64_t>(kPanelRows, N - (p + 1) * kPanelRows)));
  }
  if (p < p1) panel_gemv<P>(panels, nb, p, p1, N, x, st, y);
}
#endif

// Q8_0 prefill on AVX2 as an fp32 GEMM. Without VNNI every Q8_0 product is vpmaddubsw
// then vpmaddwd (two of its 16-bit pair sums may overflow) plus the sign trick: on Zen 1
// both multiplies issue on one pipe, so the int8 tile runs at the fp32 FMA rate at best
// (measured: 75% of it, 30.5 GFLOP/s on one core), while an FMA tile reaches ~89% (as
// oneDNN's f32 matmul does here). So for many rows on such a CPU (cpu_int8_multiply_slow;
// Zen 3's two multiply pipes make the int8 tile the faster) the weights of a pair of
// panels are dequantized, one K block at a time, into an L1 block of fp32 (w·d, 16
// outputs per k) and multiplied with the fma_tile against the inputs' int8 values times
// their block scale (q·d, what the int8 path multiplies): the same operands, only the
// fp32 rounding of the two products and of the sums differs (the float64 reference
// bounds both).
struct Q8Fp32 {
  static constexpr size_t kGroupBytes = 64;  // 16 floats per k
  static void load(const uint8_t* g, __m256& a, __m256& b) {
    a = _mm256_loadu_ps(reinterpret_cast<const float*>(g));
    b = _mm256_loadu_ps(reinterpret_cast<const float*>(g) + 8);
  }
  static void order(__m256 a, __m256 b, __m256& lo, __m256& hi) { lo = a, hi = b; }
  static constexpr int kMinRows = 24;    // fewer rows: the int8 tile (the dequantization would not pay)
  static constexpr int kChunkRows = 96;  // 16 tiles of 6 per dequantized block
  static constexpr int kBlocks = 8;      // K block: 256 k, 16 KiB of fp32
  static constexpr int kTileRows = 6;
  // Blocks [b0, b0 + nbk) of panel p (and p + 1 when `two`; else zeros) into wf[k][16].
  static void dequant(const uint8_t* panels, int64_t nb, int64_t p, bool two, int64_t b0, int nbk, float* wf) {
    const size_t pb = panel_bytes(nb, 32), qstep = size_t(kPanelRows) * 32;
    for (int h = 0; h < 2; ++h) {
      if (h == 1 && !two) {
        for (int k = 0; k < 32 * nbk; ++k) _mm256_storeu_ps(wf + 16 * k + 8, _mm256_setzero_ps());
        break;
      }
      const uint8_t* q = panels + size_t(p + h) * pb;
      const uint8_t* s = q + size_t(nb) * qstep;
      for (int bi = 0; bi < nbk; ++bi) {
        const __m256 ws = panel_scales(s, b0 + bi);
        const uint8_t* qb = q + size_t(b0 + bi) * qstep;
        float* o = wf + size_t(32 * bi) * 16 + 8 * h;
        for (int i = 0; i < 8; ++i) {  // vector i: bytes 4i..4i+3 of the 8 rows
          const __m256i v = load32(qb + 32 * i);
          _mm256_storeu_ps(o + 16 * (4 * i + 0), _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 24), 24)), ws));
          _mm256_storeu_ps(o + 16 * (4 * i + 1), _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 16), 24)), ws));
          _mm256_storeu_ps(o + 16 * (4 * i + 2), _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 8), 24)), ws));
          _mm256_storeu_ps(o + 16 * (4 * i + 3), _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(v, 24)), ws));
        }
      }
    }
  }
  // The input row's int8 blocks as fp32 values q·d (K floats).
  static void values(const BlockQ8A* xb, int64_t nb, float* out) {
    for (int64_t b = 0; b < nb; ++b) {
      const __m256 d = _mm256_set1_ps(xb[b].d);
      for (int i = 0; i < 4; ++i)
        _mm256_storeu_ps(out + 32 * b + 8 * i,
                         _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
                                           reinterpret_cast<const __m128i*>(xb[b].q + 8 * i)))),
                                       d));
    }
  }
  template <int RA>
  static void rows_of(const float* wf, int64_t nk, const float* xf, int64_t ldx, int m, int ra, bool add, float* y,
                      int64_t ldy, int valid) {
    if (ra == RA) {
      const float* xr[RA];
      for (int r = 0; r < RA; ++r) xr[r] = xf + (m + r) * ldx;
      __m256 acc[RA][2];
      fma_tile<Q8Fp32, RA, kNoStream>(reinterpret_cast<const uint8_t*>(wf), nk, xr, acc);
      fma_store<Q8Fp32, RA>(acc, y + m * ldy, ldy, valid, add);
    } else if constexpr (RA > 1) {
      rows_of<RA - 1>(wf, nk, xf, ldx, m, ra, add, y, ldy, valid);
    }
  }
  // Panels [p0, p1) × all `rows` inputs (xf: their values, ldx apart) into y.
  static void share(const uint8_t* panels, int64_t nb, int64_t p0, int64_t p1, int64_t N, const float* xf,
                    int64_t ldx, int rows, float* y, int64_t ldy) {
    alignas(64) float wf[kBlocks * 32 * 16];
    for (int m0 = 0; m0 < rows; m0 += kChunkRows) {
      const int m1 = std::min(rows, m0 + kChunkRows);
      for (int64_t b0 = 0; b0 < nb; b0 += kBlocks) {
        const int nbk = int(std::min<int64_t>(kBlocks, nb - b0));
        for (int64_t p = p0; p < p1; p += 2) {
          const bool two = p + 1 < p1;
          dequant(panels, nb, p, two, b0, nbk, wf);
          const int valid = int(std::min<int64_t>(16, N - p * kPanelRows));
          for (int m = m0; m < m1; m += kTileRows)
            rows_of<kTileRows>(wf, 32 * nbk, xf + b0 * 32, ldx, m, std::min(kTileRows, m1 - m), b0 > 0,
                               y + p * kPanelRows, ldy, valid);
        }
      }
    }
  }
};

// Panel p (two: p and p + 1, when `two`) × inputs [m, m + ra), ra ≤ RA.
template <class P, int RA>
void panel_tiles(const uint8_t* panels, int64_t nb, int64_t p, bool two, int64_t N, const uint8_t* xa, size_t ab,
                 const int32_t* st, int m, int ra, float* y, int64_t ldy) {
  if (ra == RA) {
#if defined(__AVX512F__) && defined(__AVX512VNNI__)
    if constexpr (P::kZmm) {
      if (two) return panel_tile_z<P, RA>(panels, nb, p, N, xa, ab, st, m, y, ldy);
    }
#endif
    panel_tile<P, RA>(panels, nb, p, N, xa, ab, st, m, y, ldy);
    if (two) panel_tile<P, RA>(panels, nb, p + 1, N, xa, ab, st, m, y, ldy);
  } else if constexpr (RA > 1) {
    panel_tiles<P, RA - 1>(panels, nb, p, two, N, xa, ab, st, m, ra, y, ldy);
  }
}

// The registry entry of a panel type P (PanelQ4_0<D>, PanelQ8_0<D>) for weight type RT.
// kVnni: the entry uses AVX512-VNNI; on an AVX-512 CPU without it (or without BF16, as
// the catalogue's avx512 entries) it declines and the registry falls to the avx2 entry.
template <class P, WType T, WeightType RT, bool kVnni>
struct PanelLinear {
  static int64_t blocks(const PackedWeights& w) { return w.K / kQK; }
  static bool supports(const PackedWeights& w) {
    if (kVnni && !cpu_has_avx512_vnni_bf16()) return false;
    return w.type == RT && w.data && w.NB == 1 && w.K > 0 && w.K % kQK == 0 && w.N > 0 &&
           w.row_bytes == int64_t(row_bytes(*type_info(T), w.K));
  }
  static size_t act_bytes(int K) { return (act_row_bytes(ActKind::q8a, K) + 63) / 64 * 64; }
  // Per input row: the prepared blocks, then (after all rows) nb starting sums per row.
  // Q8_0 on AVX2 from Q8Fp32::kMinRows rows, on a CPU with a half-rate integer multiply
  // (Zen 1): the prefill runs as an fp32 GEMM (Q8Fp32).
  static constexpr bool kFp32Prefill = !P::kZmm && !P::kWide && P::kQB == 32;
  static bool fp32_prefill(int rows) {
    return kFp32Prefill && rows >= Q8Fp32::kMinRows && cpu_int8_multiply_slow();
  }
  // Per input row: the prepared blocks, then (after all rows) nb starting sums per row,
  // then for the fp32 prefill each row's values (K floats).
  static size_t scratch_bytes(const PackedWeights& w, int rows) {
    return size_t(rows) * act_bytes(w.K) + size_t(rows) * size_t(blocks(w)) * 4 +
           (fp32_prefill(rows) ? size_t(rows) * size_t(w.K) * 4 : 0);
  }
  static size_t repacked_bytes(const PackedWeights& w) {
    return size_t((w.N + kPanelRows - 1) / kPanelRows) * panel_bytes(blocks(w), P::kQB);
  }
  static void repack(const PackedWeights& w, int64_t n0, int64_t n1, void* dst) {
    repack_panels(static_cast<const uint8_t*>(w.data), size_t(w.row_bytes), w.N, blocks(w), P::kQB, P::kFlip, n0, n1,
                  static_cast<uint8_t*>(dst));
  }
  // run(), prepare(), run_prepared(): StepsEntry (gemv_rows.hpp) over steps().
  static void steps(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y, int64_t ldy,
                    int rows, int threads, void* scratch, Steps part) {
    const auto* panels = static_cast<const uint8_t*>(w.data);
    const int64_t nb = blocks(w), N = w.N, np = (N + kPanelRows - 1) / kPanelRows;
    auto* xa = static_cast<uint8_t*>(scratch);
    const size_t ab = act_bytes(w.K);
    auto* st = reinterpret_cast<int32_t*>(xa + size_t(rows) * ab);
    const int nt = int(std::max<int64_t>(1, std::min<int64_t>(threads, std::max<int64_t>(np, rows))));
    constexpr int TA = panel_tile_a<P>();
    const bool fp32 = fp32_prefill(rows);
    float* xf = reinterpret_cast<float*>(st + size_t(rows) * nb);  // fp32: the inputs' values
    auto prepare = [&](int r) {
      prepare_q8a(x + r * ldx, reinterpret_cast<BlockQ8A*>(xa + r * ab), w.K);
      const auto* xb = reinterpret_cast<const BlockQ8A*>(xa + r * ab);
      for (int64_t b = 0; b < nb; ++b) st[size_t(r) * nb + b] = -P::kOffset * (xb[b].sum[0] + xb[b].sum[1]);
      if (fp32) Q8Fp32::values(xb, nb, xf + size_t(r) * w.K);
    };
    auto share = [&](int t, int n) {
      int64_t p0 = np * t / n, p1 = np * (t + 1) / n;
      if (fp32) p0 = np * t / n / 2 * 2, p1 = t + 1 == n ? np : np * (t + 1) / n / 2 * 2;  // whole pairs
      if (p0 < p1) {
        if (fp32) {
          Q8Fp32::share(panels, nb, p0, p1, N, xf, w.K, rows, y, ldy);
        } else if (rows == 1) {
          const auto* x0 = reinterpret_cast<const BlockQ8A*>(xa);
#if defined(__AVX512F__) && defined(__AVX512VNNI__)
          if constexpr (P::kZmm) panel_gemv_z<P>(panels, nb, p0, p1, N, x0, st, y);
          else
#endif
            panel_gemv<P>(panels, nb, p0, p1, N, x0, st, y);
        } else {
          for (int m0 = 0; m0 < rows; m0 += kPanelChunkA) {
            const int m1 = std::min(rows, m0 + kPanelChunkA);
            for (int64_t p = p0; p < p1; p += 2)
              for (int m = m0; m < m1; m += TA)
                panel_tiles<P, TA>(panels, nb, p, p + 1 < p1, N, xa, ab, st, m, std::min(TA, m1 - m),
                                            y, ldy);
          }
        }
        if (bias) {
          const int64_t n0 = p0 * kPanelRows, n1 = std::min(N, p1 * kPanelRows);
          for (int r = 0; r < rows; ++r)
            for (int64_t j = n0; j < n1; ++j) y[r * ldy + j] += bias[j];
        }
      }
    };
    prepare_then_share(rows, nt, prepare, share, part);
  }
  // Panel p's weights, dequantized, into sink(p's rows, v, e0) (dot_x86.hpp's sinks): per
  // block, each quant vector's 4 bytes of 8 rows become 4 vectors of 8 rows' values
  // d·(q − offset) (exact: a float product of an f16 scale and a small integer), two
  // such quads at a time (8 consecutive elements).
  template <class Sink>
  static void dequant_panel(const PackedWeights& w, int64_t p, Sink&& sink) {
    const int64_t nb = blocks(w);
    const size_t pb = panel_bytes(nb, P::kQB), qstep = size_t(kPanelRows) * P::kQB;
    const uint8_t* q = static_cast<const uint8_t*>(w.data) + size_t(p) * pb;
    const uint8_t* s = q + size_t(nb) * qstep;
    for (int64_t b = 0; b < nb; ++b) {
      const __m256 ws = panel_scales(s, b);
      const uint8_t* qb = q + size_t(b) * qstep;
      __m256 v[8];  // v[e]: the 8 rows' element e of the current 8
      // quad j of vector i: element 4i + j (Q8_0), or 4i + j and 16 + 4i + j (Q4_0)
      auto quad = [&](__m256i ints, int slot) {
        for (int j = 0; j < 4; ++j) {
          const __m256i e = P::kQB == 32 ? _mm256_srai_epi32(_mm256_slli_epi32(ints, 24 - 8 * j), 24)
                                         : _mm256_and_si256(_mm256_srli_epi32(ints, 8 * j), _mm256_set1_epi32(0xFF));
          v[slot + j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(e, _mm256_set1_epi32(P::kQB == 32 ? 0 : 8))), ws);
        }
      };
      if constexpr (P::kQB == 32) {
        const __m256i flip = _mm256_set1_epi8(char(P::kFlip));
        for (int i = 0; i < 8; i += 2) {
          quad(_mm256_xor_si256(load32(qb + 32 * i), flip), 0);
          quad(_mm256_xor_si256(load32(qb + 32 * (i + 1)), flip), 4);
          sink(v, b * kQK + 4 * i);
        }
      } else {
        const __m256i m = _mm256_set1_epi8(0xF);
        for (int h = 0; h < 2; ++h)  // low nibbles: elements 0..15; high: 16..31
          for (int i = 0; i < 4; i += 2) {
            const __m256i a = load32(qb + 32 * i), c = load32(qb + 32 * (i + 1));
            quad(_mm256_and_si256(h ? _mm256_srli_epi16(a, 4) : a, m), 0);
            quad(_mm256_and_si256(h ? _mm256_srli_epi16(c, 4) : c, m), 4);
            sink(v, b * kQK + 16 * h + 4 * i);
          }
      }
    }
  }
  // Rows [n0, n1) into bf16 rows ldo apart.
  static void dequant_bf16(const PackedWeights& w, int64_t n0, int64_t n1, uint16_t* out, int64_t ldo) {
    for (int64_t p = n0 / kPanelRows; p * kPanelRows < n1; ++p)
      dequant_panel(w, p, Bf16RowsSink{out + (p * kPanelRows - n0) * ldo, ldo,
                                       int(std::min<int64_t>(kPanelRows, n1 - p * kPanelRows))});
  }
  // Rows [n0, n1) (n0 a multiple of 32, n1 − n0 ≤ 32) as one AMX panel (the 8-row
  // panels' padding rows are zeros; 8-row groups past n1 are zeroed).
  static void dequant_amx(const PackedWeights& w, int64_t n0, int64_t n1, uint16_t* panel) {
    for (int q = 0; q < 4; ++q) {
      const int64_t n = n0 + q * kPanelRows;
      if (n < n1) dequant_panel(w, n / kPanelRows, AmxPanelSink{panel, q});
      else zero_amx_group(panel, w.K, q);
    }
  }
  static constexpr LinearKernelImpl impl(const char* name) {
    using E = StepsEntry<PanelLinear>;
    return {name, 0, supports, scratch_bytes, E::run, repacked_bytes, repack, kPanelRows, dequant_bf16, dequant_amx,
            E::prepare, E::run_prepared};
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
