// IQ4_XS weights in row-interleaved panels of R rows (the linear registry's repack hook,
// as the K-quants' in panel_k_x86.hpp, whose vectors, tiles' shape and registry entry
// (PanelKLinear) this layout shares). Per panel and 256-element super-block, 140·R
// bytes (R rows' GGUF blocks are 136·R):
//   d[R] f16, sc[8 sub-blocks][R rows] s8 (sc_j − 32, decoded at repack), R·2 bytes of
//   padding (the nibbles start on a 64-byte line for R = 16),
//   q[4 pairs c][8 groups i][R rows][4 bytes]: byte t of row r holds sub-block 2c's
//     element 4i + t in its low nibble and 2c + 1's in the high (GGUF keeps a sub-block's
//     32 nibbles in its own 16 bytes; repacked as Q4_K's so one load feeds two blocks).
// A nibble indexes the 16 int8 levels (kIq4Values) by vpshufb, in registers:
//   vpdpbusd (AVX512-VNNI) takes the levels + 128 as u8 ∈ [1, 241], so a block's dot is
//     Σ(v + 128)·x − 128·Σx (the aux bytes hold 128·Σx per activation block);
//   vpmaddubsw (AVX2) would saturate 241·127·2, so it takes |v| and x with v's sign
//     (vpsignb; |v|·|x|·2 ≤ 2·127·127 < 2¹⁵) and widens each pair sum at once by vpmaddwd
//     against the scales.
// Integer parts stay exact: sc·(Σ(v + 128)·x − 128·Σx) ≤ 32·32·127·127 per block.
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include "kernels/quant/panel_k_x86.hpp"

namespace headwise::kernels::quant {
namespace {

template <int R>
struct PanelIQ4XS {
  using B = BlockIQ4_XS;
  static constexpr WeightType kRegType = WeightType::iq4_xs;
  static constexpr int kRows = R;
  static constexpr int kD = 0, kSc = 2 * R;  // f16[R], s8[8][R]
  static constexpr int kHead = 12 * R;
  static constexpr int kQ = kHead;  // [4 c][8 i][R rows][4 bytes]
  static constexpr int kBytes = kQ + R * kQKK / 2;
  // The levels as vpdpbusd's u8 (+ 128) and as vpsignb's s8.
  alignas(16) static constexpr uint8_t kLevelsU8[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
  // Per activation block: 128·Σx (int32), what the +128 of the u8 levels added; 4 bytes unused.
  static void aux(const BlockQ8A& x, uint8_t* out) {
    const int32_t o[2] = {128 * (x.sum[0] + x.sum[1]), 0};
    std::memcpy(out, o, 8);
  }
  // rows[r]: row r's super-block, or null for a padding row. out: kBytes, zeroed.
  static void pack(const B* const* rows, uint8_t* out) {
    auto* d = reinterpret_cast<uint16_t*>(out + kD);
    auto* sc = reinterpret_cast<int8_t*>(out + kSc);
    for (int r = 0; r < R; ++r) {
      if (!rows[r]) continue;
      const B& b = *rows[r];
      d[r] = b.d;
      for (int j = 0; j < 8; ++j) sc[R * j + r] = int8_t(iq4_xs_scale(b, j));
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 8; ++i)
          for (int t = 0; t < 4; ++t) {
            const int l = 4 * i + t;  // element l of sub-blocks 2c and 2c + 1
            const auto nib = [&](int j) { return (b.q[16 * j + l % 16] >> (l < 16 ? 0 : 4)) & 0xF; };
            out[kQ + ((c * 8 + i) * R + r) * 4 + t] = uint8_t(nib(2 * c) | nib(2 * c + 1) << 4);
          }
    }
  }
  // Rows r0 .. r0 + 7 (r0 a multiple of 8) of the super-block at p, whose first element
  // is e0, into sink: the values dequantize_iq4_xs computes, (d·sc)·v (d·sc exact in
  // fp32, one rounding as ggml's), 8 rows' values of 8 consecutive elements at a time.
  template <class Sink>
  static void unpack8(const uint8_t* p, int r0, int64_t e0, Sink&& sink) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kD + 2 * r0)));
    alignas(32) float lv[16];
    for (int k = 0; k < 16; ++k) lv[k] = float(kIq4Values[k]);
    const __m256 lv0 = _mm256_load_ps(lv), lv1 = _mm256_load_ps(lv + 8);
    const __m256i nib = _mm256_set1_epi32(0xF), seven = _mm256_set1_epi32(7);
    const auto level = [&](__m256i q) {  // kIq4Values[q] per lane: two 8-entry permutes and a blend
      const __m256 hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(q, seven));
      return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lv0, q), _mm256_permutevar8x32_ps(lv1, q), hi);
    };
    for (int c = 0; c < 4; ++c) {
      __m256 D[2];  // sub-blocks 2c (low nibbles) and 2c + 1 (high)
      for (int h = 0; h < 2; ++h)
        D[h] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + kSc + R * (2 * c + h) + r0)))));
      for (int i = 0; i < 8; i += 2) {
        __m256 v[2][8];
        for (int ii = 0; ii < 2; ++ii) {
          const __m256i raw = load32(p + kQ + ((c * 8 + i + ii) * R + r0) * 4);
          for (int t = 0; t < 4; ++t)
            for (int h = 0; h < 2; ++h)
              v[h][4 * ii + t] = _mm256_mul_ps(D[h], level(_mm256_and_si256(_mm256_srli_epi32(raw, 8 * t + 4 * h), nib)));
        }
        for (int h = 0; h < 2; ++h) sink(v[h], e0 + 32 * (2 * c + h) + 4 * i);
      }
    }
  }

  // acc[a] += the panel's rows at p · input a over nsb super-blocks (x[a]: its blocks,
  // ax[a]: its aux bytes, from the panel's first on). The VNNI loop has PanelQK's shape
  // (panel_k_x86.hpp); one shared helper for the pair's dots, tried, made GCC spill in
  // Q5_K's 4-row tile: quant_bench projection/q5_K (2 threads, 4 alternating rounds)
  // 1.50-1.88 -> 1.73-2.17 ms. So each keeps its own.
  template <class V, int RA>
  static void tile(const uint8_t* p, int64_t p2, int64_t nsb, const BlockQ8A* const* x, const uint8_t* const* ax,
                   typename V::F* acc) {
    static_assert(V::kPanelRows == R, "the vector's panels are this layout's");
    using I = typename V::I;
    using F = typename V::F;
    constexpr int S = RA == 1 ? 2 : 1;  // independent dot chains per block (latency in decode)
    const I low4 = V::set8(0xF);
    const I levels = V::table16(V::kMadd16 ? static_cast<const void*>(kIq4Values) : kLevelsU8);
    for (int64_t sb = 0; sb < nsb; ++sb, p += kBytes) {
      if constexpr (V::kMadd16) {
        if constexpr (RA == 1) V::stream_ahead(p, kBytes);
      } else {
        V::ahead_span(p, p2, 0, kHead);
      }
      const F d = V::f16(p, p2, kD);
      F accsb[RA];
      for (int a = 0; a < RA; ++a) accsb[a] = V::zero_f();
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const int qc = kQ + c * 32 * R;
        if constexpr (V::kMadd16) {
          I s0, s1, s01;
          V::template scale_pairs<true>(p, kSc + R * 2 * c, s0, s1, s01);
          I dlo[RA], dhi[RA];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I v = V::load(p, p2, qc + 4 * R * i);
            const I lo = V::lookup(levels, V::and_(v, low4)), hi = V::lookup(levels, V::and_(V::srl16(v, 4), low4));
            const I alo = V::abs8(lo), ahi = V::abs8(hi);
            for (int a = 0; a < RA; ++a) {
              const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
              const I pl = V::madd(V::maddubs(alo, V::sign8(V::set32(load_i32(xb[0].q + 4 * i)), lo)), s0);
              const I ph = V::madd(V::maddubs(ahi, V::sign8(V::set32(load_i32(xb[1].q + 4 * i)), hi)), s1);
              dlo[a] = i == 0 ? pl : V::add32(dlo[a], pl);
              dhi[a] = i == 0 ? ph : V::add32(dhi[a], ph);
            }
          }
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
            accsb[a] = V::fmadd(V::cvt(dlo[a]), V::set1(xb[0].d), accsb[a]);
            accsb[a] = V::fmadd(V::cvt(dhi[a]), V::set1(xb[1].d), accsb[a]);
          }
          continue;
        }
        V::ahead_span(p, p2, qc, 32 * R);
        I dlo[RA][S], dhi[RA][S];
        for (int a = 0; a < RA; ++a)
          for (int s = 0; s < S; ++s) dlo[a][s] = dhi[a][s] = V::zero_i();
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          const I v = V::load(p, p2, qc + 4 * R * i);
          const I lo = V::lookup(levels, V::and_(v, low4)), hi = V::lookup(levels, V::and_(V::srl16(v, 4), low4));
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
            dlo[a][i % S] = V::dot(dlo[a][i % S], lo, V::set32(load_i32(xb[0].q + 4 * i)));
            dhi[a][i % S] = V::dot(dhi[a][i % S], hi, V::set32(load_i32(xb[1].q + 4 * i)));
          }
        }
        const I sc0 = V::s8(p, p2, kSc + R * 2 * c), sc1 = V::s8(p, p2, kSc + R * (2 * c + 1));
        for (int a = 0; a < RA; ++a) {
          const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
          I l = dlo[a][0], h = dhi[a][0];
          if constexpr (S == 2) l = V::add32(l, dlo[a][1]), h = V::add32(h, dhi[a][1]);
          l = V::sub32(l, V::set32(load_i32(ax[a] + (sb * 8 + 2 * c) * 8)));
          h = V::sub32(h, V::set32(load_i32(ax[a] + (sb * 8 + 2 * c + 1) * 8)));
          accsb[a] = V::fmadd(V::cvt(V::mul32(l, sc0)), V::set1(xb[0].d), accsb[a]);
          accsb[a] = V::fmadd(V::cvt(V::mul32(h, sc1)), V::set1(xb[1].d), accsb[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = V::fmadd(accsb[a], d, acc[a]);
    }
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
