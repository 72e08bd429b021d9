// Q2_K weights in row-interleaved panels of R rows (the linear registry's repack hook,
// as the K-quants' in panel_k_x86.hpp, whose vectors and registry entry (PanelKLinear)
// this layout shares). Per panel and 256-element super-block, 84·R bytes, as R rows' GGUF
// blocks:
//   d[R] f16, dmin[R] f16, sm[16 sub-blocks][R rows] u8 (GGUF's scales[j] as stored: the
//   scale in the low nibble, the min in the high; split in registers),
//   lo[2 halves][8 groups][R rows][4 bytes]: GGUF qs[32h + 4i + t], bits 2k, 2k + 1 the
//     weight of block 4h + k's element 4i + t (Q3_K's low-bit planes, PanelQ3K).
// A weight's byte is q ∈ [0, 3] (x = d·sc·q − dmin·m), dotted by vpdpbusd (AVX2:
// vpmaddubsw, 4 products a half summed in 16 bits: 4·2·3·127 < 2¹⁵) against the int8
// inputs; scales as Q3_K's (one per 16, int32 multiply per half). The mins are a float
// sum per super-block, Σ_j m_j·(x.d·Σx over sub-block j), from the inputs' half sums
// (the aux bytes: x.d·Σx of each half, two floats).
// Integer parts stay exact: sc·Σq·x ≤ 15·16·3·127 per half.
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include "kernels/quant/panel_k_x86.hpp"

namespace headwise::kernels::quant {
namespace {

template <int R>
struct PanelQ2K {
  using B = BlockQ2_K;
  static constexpr WeightType kRegType = WeightType::q2_k;
  static constexpr int kRows = R;
  static constexpr int kD = 0, kDmin = 2 * R, kSm = 4 * R;  // f16[R] ×2, u8[16][R]
  static constexpr int kHead = 20 * R;
  static constexpr int kLo = kHead;  // [2 halves][8 i][R rows][4 bytes]
  static constexpr int kBytes = kLo + R * kQKK / 4;
  // Per activation block: x.d·Σx of each half (two floats), the mins' factors.
  static void aux(const BlockQ8A& x, uint8_t* out) {
    const float s[2] = {x.d * float(x.sum[0]), x.d * float(x.sum[1])};
    std::memcpy(out, s, 8);
  }
  // rows[r]: row r's super-block, or null for a padding row. out: kBytes, zeroed.
  static void pack(const B* const* rows, uint8_t* out) {
    auto* d = reinterpret_cast<uint16_t*>(out + kD);
    auto* dmin = reinterpret_cast<uint16_t*>(out + kDmin);
    for (int r = 0; r < R; ++r) {
      if (!rows[r]) continue;
      const B& b = *rows[r];
      d[r] = b.d;
      dmin[r] = b.dmin;
      for (int j = 0; j < 16; ++j) out[kSm + R * j + r] = b.scales[j];
      for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 8; ++i) std::memcpy(out + kLo + ((h * 8 + i) * R + r) * 4, b.qs + 32 * h + 4 * i, 4);
    }
  }
  // Rows r0 .. r0 + 7 (r0 a multiple of 8) of the super-block at p, whose first element
  // is e0, into sink: the values dequantize_q2_k computes, (d·sc)·q − dmin·m (both
  // products exact in fp32: one rounding, as ggml's), 8 rows' values of 8 consecutive
  // elements at a time.
  template <class Sink>
  static void unpack8(const uint8_t* p, int r0, int64_t e0, Sink&& sink) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kD + 2 * r0)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kDmin + 2 * r0)));
    const __m256i three = _mm256_set1_epi32(3), nib = _mm256_set1_epi32(0xF);
    for (int j = 0; j < 8; ++j) {  // block j: sub-blocks of 16 2j and 2j + 1
      __m256 D[2], M[2];
      for (int h = 0; h < 2; ++h) {
        const __m256i sm = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + kSm + R * (2 * j + h) + r0)));
        D[h] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sm, nib)));
        M[h] = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_srli_epi32(sm, 4)));
      }
      for (int i = 0; i < 8; i += 2) {  // elements 4i .. 4i + 7 of the block
        __m256 v[8];
        for (int ii = 0; ii < 2; ++ii) {
          const __m256i lo = load32(p + kLo + ((j / 4 * 8 + i + ii) * R + r0) * 4);
          for (int t = 0; t < 4; ++t) {
            const __m256i q = _mm256_and_si256(_mm256_srli_epi32(lo, 8 * t + 2 * (j % 4)), three);
            v[4 * ii + t] = _mm256_sub_ps(_mm256_mul_ps(D[i / 4], _mm256_cvtepi32_ps(q)), M[i / 4]);
          }
        }
        sink(v, e0 + 32 * j + 4 * i);
      }
    }
  }

  template <class V, int RA>
  static void tile(const uint8_t* p, int64_t p2, int64_t nsb, const BlockQ8A* const* x, const uint8_t* const* ax,
                   typename V::F* acc) {
    static_assert(V::kPanelRows == R, "the vector's panels are this layout's");
    using I = typename V::I;
    using F = typename V::F;
    const I low2 = V::set8(0x03), nib = V::set32(0xF);
    for (int64_t sb = 0; sb < nsb; ++sb, p += kBytes) {
      if constexpr (V::kMadd16) {
        if constexpr (RA == 1) V::stream_ahead(p, kBytes);
      } else {
        V::ahead_span(p, p2, 0, kHead);
      }
      const F d = V::f16(p, p2, kD), dmin = V::f16(p, p2, kDmin);
      // − dmin·Σ_j m_j·x.d·Σx over sub-block j
      {
        F macc[RA];
        for (int a = 0; a < RA; ++a) macc[a] = V::zero_f();
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          const F mf = V::cvt(V::srl16(V::u8(p, p2, kSm + R * j), 4));  // lanes < 256: the 16-bit shift is the 32-bit one
          for (int a = 0; a < RA; ++a) {
            float xs;
            std::memcpy(&xs, ax[a] + (sb * 8 + j / 2) * 8 + 4 * (j % 2), 4);
            macc[a] = V::fmadd(mf, V::set1(xs), macc[a]);
          }
        }
        for (int a = 0; a < RA; ++a) acc[a] = V::fnmadd(dmin, macc[a], acc[a]);
      }
      // + d·Σ_j x_j.d·(sc_2j·Σ q·x over the first half + sc_2j+1·… the second)
      F accsb[RA];
      for (int a = 0; a < RA; ++a) accsb[a] = V::zero_f();
      if constexpr (V::kMadd16) {
        // Without VNNI (see V8::kMadd16): per half block, 4 products added in 16 bits and
        // widened by one vpmaddwd against the sub-block's scale in both halves of a lane.
        const I nib16 = V::set32(0x000F000F);
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          I s0, s1, s01;
          V::template scale_pairs<false>(p, kSm + R * 2 * j, s0, s1, s01);
          s0 = V::and_(s0, nib16), s1 = V::and_(s1, nib16);
          I t[RA], dsum[RA];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I l = V::load(p, p2, kLo + (j / 4) * 32 * R + 4 * R * i);
            const I qv = V::and_(j % 4 ? V::srl16(l, 2 * (j % 4)) : l, low2);
            for (int a = 0; a < RA; ++a) {
              const I pr = V::maddubs(qv, V::set32(load_i32(x[a][sb * 8 + j].q + 4 * i)));
              t[a] = i % 4 == 0 ? pr : V::add16(t[a], pr);
              if (i % 4 == 3) {
                const I w = V::madd(t[a], i < 4 ? s0 : s1);
                dsum[a] = i == 3 ? w : V::add32(dsum[a], w);
              }
            }
          }
          for (int a = 0; a < RA; ++a) accsb[a] = V::fmadd(V::cvt(dsum[a]), V::set1(x[a][sb * 8 + j].d), accsb[a]);
        }
      } else if constexpr (RA == 1) {
        // Decode: the four blocks 4u .. 4u + 3 together, so each low-bit vector is loaded
        // once for its four blocks (the loop below, for RA rows, loads it per block).
        for (int u = 0; u < 2; ++u) {
          const int la = kLo + u * 32 * R;
          V::ahead_span(p, p2, la, 32 * R);
          const BlockQ8A* xb = x[0] + sb * 8 + 4 * u;
          I dl[4], dh[4];
          for (int k = 0; k < 4; ++k) dl[k] = dh[k] = V::zero_i();
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I l = V::load(p, p2, la + 4 * R * i);
            for (int k = 0; k < 4; ++k) {
              const I q = V::and_(k ? V::srl16(l, 2 * k) : l, low2);
              I& dk = i < 4 ? dl[k] : dh[k];
              dk = V::dot(dk, q, V::set32(load_i32(xb[k].q + 4 * i)));
            }
          }
          for (int k = 0; k < 4; ++k) {
            const int j = 4 * u + k;
            const I s0 = V::and_(V::u8(p, p2, kSm + R * 2 * j), nib), s1 = V::and_(V::u8(p, p2, kSm + R * (2 * j + 1)), nib);
            const I sum = V::add32(V::mul32(dl[k], s0), V::mul32(dh[k], s1));
            accsb[0] = V::fmadd(V::cvt(sum), V::set1(xb[k].d), accsb[0]);
          }
        }
      } else {
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          if ((j & 3) == 0) V::ahead_span(p, p2, kLo + (j / 4) * 32 * R, 32 * R);
          I dlo[RA], dhi[RA];
          for (int a = 0; a < RA; ++a) dlo[a] = dhi[a] = V::zero_i();
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I l = V::load(p, p2, kLo + (j / 4) * 32 * R + 4 * R * i);
            const I qv = V::and_(j % 4 ? V::srl16(l, 2 * (j % 4)) : l, low2);
            for (int a = 0; a < RA; ++a) {
              const BlockQ8A& xb = x[a][sb * 8 + j];
              if (i < 4) dlo[a] = V::dot(dlo[a], qv, V::set32(load_i32(xb.q + 4 * i)));
              else dhi[a] = V::dot(dhi[a], qv, V::set32(load_i32(xb.q + 4 * i)));
            }
          }
          const I s0 = V::and_(V::u8(p, p2, kSm + R * 2 * j), nib), s1 = V::and_(V::u8(p, p2, kSm + R * (2 * j + 1)), nib);
          for (int a = 0; a < RA; ++a) {
            const I sum = V::add32(V::mul32(dlo[a], s0), V::mul32(dhi[a], s1));
            accsb[a] = V::fmadd(V::cvt(sum), V::set1(x[a][sb * 8 + j].d), accsb[a]);
          }
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = V::fmadd(accsb[a], d, acc[a]);
    }
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
