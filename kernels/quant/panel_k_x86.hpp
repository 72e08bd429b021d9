// Q3_K, Q4_K, Q5_K and Q6_K weights in row-interleaved panels (the linear registry's repack
// hook, kernels/matmul/linear.hpp): the avx2/avx512 entries of these types read this
// copy, written once at load, instead of the GGUF rows.
//
// Why: on GGUF rows a decode step does, per row and 32-element sub-block, one 8-bit dot
// and then scalar work (6-bit scale/min decoding, scale products, a min-correction
// chain) that costs more than the dot and keeps decode compute-bound at ~26% of the read
// bandwidth. In a panel of R output rows (8: one per 32-bit lane of a ymm; 16: of a zmm)
// one vector holds 4 consecutive weights of each of the R rows, so a dot (vpdpbusd, or
// vpmaddubsw + vpmaddwd) against 4 activation bytes broadcast to every lane advances R
// rows at once, and every scale step after it (int → float, scale multiply, multiply-add,
// the mins) is one vector instruction for R rows. The 6-bit scales and mins are decoded at
// repack time into bytes (one vpmovzxbd loads R rows' scale of a sub-block); d and dmin
// stay f16 (one vcvtph2ps for R rows). Per panel and 256-element super-block:
//   Q4_K (148·R bytes; R rows' GGUF blocks are 144·R):
//     d[R] f16, dmin[R] f16, sc[8 sub-blocks][R rows] u8, m[8][R] u8,
//     q[4 pairs c][8 groups i][R rows][4 bytes]: byte t of row r = GGUF byte 32c + 4i + t,
//       i.e. sub-block 2c's element 4i + t in the low nibble, sub-block 2c + 1's in the high
//   Q5_K (180·R bytes, R rows' GGUF blocks are 176·R): as Q4_K, then
//     qh[8 groups i][R rows][4 bytes]: GGUF qh[4i + t], bit j = 5th bit of sub-block j's element 4i + t
//   Q6_K (210·R bytes, as R rows' GGUF blocks):
//     d[R] f16, sc[16 sub-blocks of 16][R rows] s8,
//     lo[4 pairs][8 groups][R rows][4 bytes]: low 4 bits of q, block 2p in the low nibble,
//       2p + 1 in the high (block = 32 elements, one activation block)
//     hi[2 quads][8 groups][R rows][4 bytes]: top 2 bits of q, block 4u + k in bits 2k, 2k+1
//   Q3_K (114·R bytes, R rows' GGUF blocks are 110·R): PanelQ3K below.
// A last panel of fewer than R rows is padded with zero rows (d = 0: they add nothing,
// and no y is written past N).
//
// Products: a tile of panels × RA input rows (RA = 1 in decode; 4 on AVX-512, whose 32
// registers hold the accumulators; 3 with AVX2's 16 in prefill. On Zen 1 unpacking a
// weight vector cost more than a spill, and RA 2 → 5 took projection/q4_K (128 rows, 1
// thread) 42-45 → 46-48 GFLOP/s, q5_K 35-36 → 41-42, q6_K 31-32 → 37-38; 6 was no faster.
// On Zen 3 (2026-12-02) 5's spills cost more than they save: llama-134m Q4_K_M prefill,
// 512 tokens, 2 threads, binaries alternating over 5 rounds, RA 5 445-519 tok/s, 4 491-562,
// 3 539-971 (3 faster in every round); so every unpacked weight
// vector feeds RA dots; a thread takes whole panels, inputs in chunks of 64 rows. The
// avx2 entries read 8-row panels one per ymm (V8). On AVX-512, Q5_K takes two 8-row
// panels per zmm (V16x2: two loads and an insert per vector, two streams through memory),
// Q4_K (since session 19, below) and Q6_K one 16-row panel per zmm (V16Far: one load, and
// only the far prefetch: dot_x86.hpp's ahead_far; in decode where quant::cpu_decode_nontemporal
// holds, V16Nta's non-temporal one instead). Measured on the Zen 4 this was written on
// (AVX-512 at the 256-bit rate), zmm pairs against one panel per ymm: single thread,
// K 2048 × N 2048 × 128 rows, Q4_K 4.6 → 2.9 ms, ~370 GOP/s of ~850 int8 peak; Q6_K
// 5.2 → 3.5 ms; decode 1.15-1.2× faster; RA = 6 no faster. On the Zen 5 host since
// (full-width AVX-512; 2 threads, the 768 × 32000 classifier shape, 6 copies so each
// call reads from DRAM, 3 alternations): Q6_K's 16-row panels stream at
// 46-83 GB/s where its pairs reached 39-74 (1 thread: 33-36 against 28-31), while Q4_K
// went the other way (16-row panels 67-74 GB/s, pairs 79-97; probe 93): each type keeps
// the faster. On this project's Zen 4 (session 19, 2 threads, quant_bench, alternating
// binaries) Q4_K's 16-row panels with only the far prefetch (V16Far) are the faster in
// both: projection/q4_K (128 rows) 403-488 -> 536-587 GFLOP/s; decode_stream 27-31 -> 28-34
// GB/s, decode_stream_small 28-34 -> 33-39 (6 rounds; with ahead()'s L1 + L2 requests the
// 16-row panels read 22-27 and 25-28); llama-134m Q4_K_M prefill 1866-2053 -> 2136-2366
// tok/s (4 rounds; decode within that run's noise). Q5_K's 16-row panels were faster in
// prefill (333-428 -> 413-485 GFLOP/s) but slower in decode (decode_stream 24-29 -> 21-24
// GB/s, either prefetch), so Q5_K keeps the pairs. Decode Q6_K takes the four blocks that
// share a high-bit vector together (3 loads per 4 blocks instead of 8, and one vpternlogd
// to merge the bits): in L2, 1 thread, 79-80 → 84 GB/s (quant_bench decode_cold
// reproduces the streaming figures).
// Integer parts stay exact: Q4_K's sc·Σq·x ≤ 63·32·15·127 and Q6_K's sc·(Σq·x − 32·Σx)
// per half are int32 (vpmulld), one conversion per activation block (Q5_K:
// ≤ 63·32·31·127); the offsets (Q6_K's −32·Σx per half) and Q4_K's x.d·Σx (for the mins)
// are computed once per input row into scratch next to its int8 blocks.
// Against the GGUF-row x86 kernels, since removed (bench/ab_quant_bench.py, main's quant_bench
// against this one, 1 thread, loaded machine, medians of 4): avx512 decode_projection (K 4096 × N 8192)
// Q4_K 4.3×, Q6_K 1.8×; projection (prefill, 128 rows) Q4_K 3.5×, Q6_K 3.7×; avx2 3.2×,
// 1.7×, 2.2×, 1.7×. Q5_K against the catalogue's GGUF-row kernel in the same binary
// (decode/q5_K vs decode_projection/q5_K, avx512, 1 thread; before their removal): decode 1.70 → 0.66 ms,
// prefill 10.8 → 3.0 ms.
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/matmul/linear.hpp"
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {
namespace {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline __m128i load_8(const void* p) { return _mm_loadl_epi64(static_cast<const __m128i*>(p)); }
inline __m128i load_16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
// n bytes from p asked for ahead (dot_x86.hpp's ahead()), a line at a time.
inline void ahead_bytes(const uint8_t* p, int n) {
  for (int i = 0; i < n; i += 64) ahead(p + i);
}
// The same bytes asked for only into L2 (dot_x86.hpp's ahead_far): the 16-row panels (V16Far).
inline void ahead_far_bytes(const uint8_t* p, int n) {
  for (int i = 0; i < n; i += 64) ahead_far(p + i);
}

// The vector decode takes in place of V where quant::cpu_decode_nontemporal(avx512)
// holds: V16Nta for V16Far (below), else V itself.
template <class V>
struct NtaOf {
  using T = V;
};

// The vector operations of the tiles, one output row per 32-bit lane: V8 (one 8-row
// panel in a ymm; AVX2, or AVX-512VL with dot D), V16x2 (two 8-row panels side by side in
// a zmm, at p and p + p2, AVX512-VNNI) and V16Far (one 16-row panel in a zmm). Loads take
// the panel's address p, the second panel's offset p2 (V16x2 only) and the byte offset o.
template <class D>
struct V8 {
  using I = __m256i;
  using F = __m256;
  static constexpr int kRows = 8;
  static constexpr int kPanelRows = 8;
  static I load(const uint8_t* p, int64_t, int o) { return load32(p + o); }
  static F f16(const uint8_t* p, int64_t, int o) { return _mm256_cvtph_ps(load_16(p + o)); }
  static I u8(const uint8_t* p, int64_t, int o) { return _mm256_cvtepu8_epi32(load_8(p + o)); }
  static I s8(const uint8_t* p, int64_t, int o) { return _mm256_cvtepi8_epi32(load_8(p + o)); }
  static void ahead_span(const uint8_t* p, int64_t, int o, int n) { ahead_bytes(p + o, n); }
  // The kMadd16 tiles' prefetch, decode only: one request per line of a super-block's n
  // bytes, 4 KiB on. On Zen 1 (2 loads a cycle, prefetches among them) the two requests a
  // line of ahead() (2 KiB into L1, 16 KiB into L2) cost more than they won: quant_bench,
  // 2 threads, 5 alternating rounds, medians, GB/s: decode_stream q4_K 15.1 → 17.3, q6_K
  // 11.3 → 15.0; decode_classifier q4_K 14.5 → 16.7, q6_K 12.0 → 13.8; decode_stream_small
  // q6_K 11.0 → 12.2 (non-temporal 4 KiB: within the noise of this; 2 KiB: less). Prefill
  // tiles (RA > 1) reread their panel from L1/L2 and ask for nothing: projection/q4_K 128
  // rows 38-42 → 44-45 GFLOP/s, q6_K 30 → 31.
  static void stream_ahead(const uint8_t* p, int n) {
    for (int i = 0; i < n; i += 64) _mm_prefetch(reinterpret_cast<const char*>(p) + 4096 + i, _MM_HINT_T0);
  }
  static I set8(char c) { return _mm256_set1_epi8(c); }
  static I set32(int32_t v) { return _mm256_set1_epi32(v); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I srl16(I a, int n) { return _mm256_srli_epi16(a, n); }
  static I sll16(I a, int n) { return _mm256_slli_epi16(a, n); }
  static I add32(I a, I b) { return _mm256_add_epi32(a, b); }
  static I mul32(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I zero_i() { return _mm256_setzero_si256(); }
  // Bits 4-5 of every byte from h, the others from l (whose bits 4-7 are zero).
  static I merge45(I l, I h) {
#if defined(__AVX512VL__)
    return _mm256_ternarylogic_epi32(h, l, _mm256_set1_epi8(0x30), 0xE4);  // 0x30 ? h : l
#else
    return _mm256_or_si256(l, _mm256_and_si256(h, _mm256_set1_epi8(0x30)));
#endif
  }
  // Bit 2 of every byte from h, the others from l (whose bits 2-7 are zero): Q3_K's 3rd bit.
  static I merge2(I l, I h) {
#if defined(__AVX512VL__)
    return _mm256_ternarylogic_epi32(h, l, _mm256_set1_epi8(0x04), 0xE4);
#else
    return _mm256_or_si256(l, _mm256_and_si256(h, _mm256_set1_epi8(0x04)));
#endif
  }
  static I dot(I acc, I u, I s) { return D::dot_acc(acc, u, s); }
  // A 16-byte table in both 128-bit lanes, and its entries at the low 4 bits of each byte
  // of i (whose bit 7 is clear): IQ4_XS's levels.
  static I table16(const void* t) { return _mm256_broadcastsi128_si256(load_16(t)); }
  static I lookup(I t, I i) { return _mm256_shuffle_epi8(t, i); }
  static I abs8(I a) { return _mm256_abs_epi8(a); }
  static I sign8(I a, I s) { return _mm256_sign_epi8(a, s); }  // a, negated where s < 0 (0 where s = 0)
  // Without VNNI the products are vpmaddubsw's 16-bit pair sums: the tiles add several
  // in 16 bits and widen them with ONE vpmaddwd against the rows' scales (kMadd16),
  // instead of a vpmaddwd per product and a vpmulld per sub-block. On Zen 1 all three
  // multiplies issue on one pipe (vpmulld ymm at a quarter of the rate). Measured there
  // (quant_bench, 1 thread): decode_projection q4_K 4.29 → 2.28 ms, q5_K 7.35 → 3.28,
  // q6_K 5.59 → 3.93; projection (128 rows) q4_K 19 → 37 GFLOP/s, q5_K 17 → 33, q6_K
  // 17 → 30.
  static constexpr bool kMadd16 = !D::kWideU8;
  static I maddubs(I u, I s) { return _mm256_maddubs_epi16(u, s); }
  static I add16(I a, I b) { return _mm256_add_epi16(a, b); }
  static I madd(I a, I b) { return _mm256_madd_epi16(a, b); }
  static I sub32(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I sll32(I a, int n) { return _mm256_slli_epi32(a, n); }
  // The 16 scale bytes at p + o, two sub-blocks' 8 rows each (a, b), as int16 pairs per
  // row lane: s0 = (a, a), s1 = (b, b), s01 = (a, b) — vpmaddwd's other operands. One
  // widening and four shuffles (two vpmovsxbd per sub-block and masks cost more).
  template <bool kSigned>
  static void scale_pairs(const uint8_t* p, int o, I& s0, I& s1, I& s01) {
    const __m128i raw = load_16(p + o);
    const I w = kSigned ? _mm256_cvtepi8_epi16(raw) : _mm256_cvtepu8_epi16(raw);  // a rows 0-7 | b rows 0-7
    const I t = _mm256_permute4x64_epi64(w, 0xD8);  // a 0-3, b 0-3 | a 4-7, b 4-7
    s0 = _mm256_unpacklo_epi16(t, t);
    s1 = _mm256_unpackhi_epi16(t, t);
    s01 = _mm256_unpacklo_epi16(t, _mm256_bsrli_epi128(t, 8));
  }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F zero_f() { return _mm256_setzero_ps(); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F loadf(const float* p) { return _mm256_loadu_ps(p); }
  static void storef(float* p, F v) { _mm256_storeu_ps(p, v); }
};
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
// The zmm operations both AVX-512 layouts share (everything but the loads).
struct V16Ops {
  using I = __m512i;
  using F = __m512;
  static constexpr int kRows = 16;
  static constexpr bool kMadd16 = false;  // vpdpbusd sums into 32 bits
  static I set8(char c) { return _mm512_set1_epi8(c); }
  static I set32(int32_t v) { return _mm512_set1_epi32(v); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I srl16(I a, int n) { return _mm512_srli_epi16(a, unsigned(n)); }
  static I sll16(I a, int n) { return _mm512_slli_epi16(a, unsigned(n)); }
  static I add32(I a, I b) { return _mm512_add_epi32(a, b); }
  static I mul32(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I zero_i() { return _mm512_setzero_si512(); }
  static I merge45(I l, I h) { return _mm512_ternarylogic_epi32(h, l, _mm512_set1_epi8(0x30), 0xE4); }
  static I merge2(I l, I h) { return _mm512_ternarylogic_epi32(h, l, _mm512_set1_epi8(0x04), 0xE4); }
  static I dot(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static I table16(const void* t) { return _mm512_broadcast_i32x4(load_16(t)); }
  static I lookup(I t, I i) { return _mm512_shuffle_epi8(t, i); }
  static I sub32(I a, I b) { return _mm512_sub_epi32(a, b); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F zero_f() { return _mm512_setzero_ps(); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F loadf(const float* p) { return _mm512_loadu_ps(p); }
  static void storef(float* p, F v) { _mm512_storeu_ps(p, v); }
};
struct V16x2 : V16Ops {
  static constexpr int kPanelRows = 8;
  static I load(const uint8_t* p, int64_t p2, int o) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(p + o)), load32(p + p2 + o), 1);
  }
  static F f16(const uint8_t* p, int64_t p2, int o) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(load_16(p + o)), load_16(p + p2 + o), 1));
  }
  static I u8(const uint8_t* p, int64_t p2, int o) {
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(load_8(p + o), load_8(p + p2 + o)));
  }
  static I s8(const uint8_t* p, int64_t p2, int o) {
    return _mm512_cvtepi8_epi32(_mm_unpacklo_epi64(load_8(p + o), load_8(p + p2 + o)));
  }
  static void ahead_span(const uint8_t* p, int64_t p2, int o, int n) { ahead_bytes(p + o, n), ahead_bytes(p + p2 + o, n); }
};
// A 16-row panel, its lines asked for only into L2 (ahead_far_bytes): with ahead()'s
// L1 + L2 pair the 16-row panels streamed the slowest (see the top of this file).
struct V16Far : V16Ops {
  static constexpr int kPanelRows = 16;
  static I load(const uint8_t* p, int64_t, int o) { return _mm512_loadu_si512(p + o); }
  static F f16(const uint8_t* p, int64_t, int o) { return _mm512_cvtph_ps(load32(p + o)); }
  static I u8(const uint8_t* p, int64_t, int o) { return _mm512_cvtepu8_epi32(load_16(p + o)); }
  static I s8(const uint8_t* p, int64_t, int o) { return _mm512_cvtepi8_epi32(load_16(p + o)); }
  static void ahead_span(const uint8_t* p, int64_t, int o, int n) { ahead_far_bytes(p + o, n); }
};
// The same panels asked for non-temporally (dot_x86.hpp's ahead_nta, which has the
// figures): decode on hosts where quant::cpu_decode_nontemporal(avx512) holds.
struct V16Nta : V16Far {
  static void ahead_span(const uint8_t* p, int64_t, int o, int n) {
    for (int i = 0; i < n; i += 64) ahead_nta(p + o + i);
  }
};
template <>
struct NtaOf<V16Far> {
  using T = V16Nta;
};
#endif


// Q4_K, and Q5_K (k5: the 5th bits in a plane after the nibbles), in panels of R rows.
template <bool k5, int R>
struct PanelQK {
  using B = std::conditional_t<k5, BlockQ5_K, BlockQ4_K>;
  static constexpr WeightType kRegType = k5 ? WeightType::q5_k : WeightType::q4_k;
  static constexpr int kRows = R;
  static constexpr int kD = 0, kDmin = 2 * R, kSc = 4 * R, kMin = 12 * R;  // f16[R] ×2, u8[8][R] ×2
  static constexpr int kHead = 20 * R;
  static constexpr int kQ = kHead;                  // [4 c][8 i][R rows][4 bytes]
  static constexpr int kHi = kQ + R * kQKK / 2;     // Q5_K's 5th bits: [8 i][R rows][4 bytes]
  static constexpr int kBytes = kHi + (k5 ? R * kQKK / 8 : 0);
  // Per activation block: x.d·Σx (float) for the mins; 4 bytes unused.
  static void aux(const BlockQ8A& x, uint8_t* out) {
    const float xs = x.d * float(x.sum[0] + x.sum[1]);
    std::memcpy(out, &xs, 4);
    std::memset(out + 4, 0, 4);
  }
  // rows[r]: row r's super-block, or null for a padding row. out: kBytes, zeroed.
  static void pack(const B* const* rows, uint8_t* out) {
    auto* d = reinterpret_cast<uint16_t*>(out + kD);
    auto* dmin = reinterpret_cast<uint16_t*>(out + kDmin);
    uint8_t *sc = out + kSc, *mn = out + kMin, *q = out + kQ;
    for (int r = 0; r < R; ++r) {
      if (!rows[r]) continue;
      const B& b = *rows[r];
      d[r] = b.d;
      dmin[r] = b.dmin;
      for (int j = 0; j < 8; ++j) {
        int s, m;
        k_scale_min(b.scales, j, &s, &m);
        sc[R * j + r] = uint8_t(s);
        mn[R * j + r] = uint8_t(m);
      }
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 8; ++i) std::memcpy(q + ((c * 8 + i) * R + r) * 4, b.q + 32 * c + 4 * i, 4);
      // Q5_K: qh[l] bit j is the 5th bit of element l of sub-block j; kept as is, 4 bytes a lane
      if constexpr (k5)
        for (int i = 0; i < 8; ++i) std::memcpy(out + kHi + (i * R + r) * 4, b.qh + 4 * i, 4);
    }
  }
  // Rows r0 .. r0 + 7 (r0 a multiple of 8) of the super-block at p, whose first element
  // is e0, into sink (dot_x86.hpp's sinks): the values dequantize_k_scale_min computes,
  // d·sc·q − dmin·m (d·sc·q and dmin·m are exact in fp32, so a contracted multiply-add
  // rounds the same), 8 rows' values of 8 consecutive elements at a time.
  template <class Sink>
  static void unpack8(const uint8_t* p, int r0, int64_t e0, Sink&& sink) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kD + 2 * r0)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kDmin + 2 * r0)));
    const auto u8s = [&](int at) {  // 8 rows' bytes at p + at as floats
      return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + at))));
    };
    const __m256i nib = _mm256_set1_epi32(0xF), one = _mm256_set1_epi32(1);
    for (int c = 0; c < 4; ++c) {
      __m256 D[2], Mn[2];  // sub-blocks 2c (low nibbles) and 2c + 1 (high)
      for (int h = 0; h < 2; ++h) {
        D[h] = _mm256_mul_ps(d, u8s(kSc + R * (2 * c + h) + r0));
        Mn[h] = _mm256_mul_ps(dmin, u8s(kMin + R * (2 * c + h) + r0));
      }
      for (int i = 0; i < 8; i += 2) {
        __m256 v[2][8];
        for (int ii = 0; ii < 2; ++ii) {
          const __m256i raw = load32(p + kQ + ((c * 8 + i + ii) * R + r0) * 4);
          __m256i hb = _mm256_setzero_si256();
          if constexpr (k5) hb = load32(p + kHi + ((i + ii) * R + r0) * 4);
          for (int t = 0; t < 4; ++t)
            for (int h = 0; h < 2; ++h) {
              __m256i q = _mm256_and_si256(_mm256_srli_epi32(raw, 8 * t + 4 * h), nib);
              if constexpr (k5)
                q = _mm256_or_si256(q, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(hb, 8 * t + 2 * c + h), one), 4));
              v[h][4 * ii + t] = _mm256_sub_ps(_mm256_mul_ps(D[h], _mm256_cvtepi32_ps(q)), Mn[h]);
            }
        }
        for (int h = 0; h < 2; ++h) sink(v[h], e0 + 32 * (2 * c + h) + 4 * i);
      }
    }
  }
  // Bit j of every byte of h moved to bit 4 (the caller masks it).
  template <class V>
  static typename V::I bit_to_4(typename V::I h, int j) {
    return j < 4 ? V::sll16(h, 4 - j) : j == 4 ? h : V::srl16(h, j - 4);
  }

  // Group i of pair c at p (its bytes from qc): sub-block 2c's weights (lo) and 2c + 1's
  // (hi), each byte one weight (Q5_K: with its 5th bit).
  template <class V>
  static void unpack(const uint8_t* p, int64_t p2, int qc, int c, int i, typename V::I low4, typename V::I* lo,
                     typename V::I* hi) {
    using I = typename V::I;
    const I v = V::load(p, p2, qc + 4 * R * i);
    *lo = V::and_(v, low4);
    *hi = V::and_(V::srl16(v, 4), low4);
    if constexpr (k5) {
      const I h = V::load(p, p2, kHi + 4 * R * i), bit4 = V::set8(0x10);
      *lo = V::or_(*lo, V::and_(bit_to_4<V>(h, 2 * c), bit4));
      *hi = V::or_(*hi, V::and_(bit_to_4<V>(h, 2 * c + 1), bit4));
    }
  }

  // acc[a] += the panel's rows at p · input a over nsb super-blocks (x[a]: its blocks,
  // ax[a]: its aux bytes, from the panel's first on).
  template <class V, int RA>
  static void tile(const uint8_t* p, int64_t p2, int64_t nsb, const BlockQ8A* const* x, const uint8_t* const* ax,
                   typename V::F* acc) {
    static_assert(V::kPanelRows == R, "the vector's panels are this layout's");
    using I = typename V::I;
    using F = typename V::F;
    constexpr int S = RA == 1 ? 2 : 1;  // independent dot chains per sub-block (latency in decode)
    const I low4 = V::set8(0xF);
    for (int64_t sb = 0; sb < nsb; ++sb, p += kBytes) {
      if constexpr (V::kMadd16) {
        if constexpr (RA == 1) V::stream_ahead(p, kBytes);
      } else {
        V::ahead_span(p, p2, 0, kHead);
        if constexpr (k5) V::ahead_span(p, p2, kHi, kBytes - kHi);
      }
      const F d = V::f16(p, p2, kD), dmin = V::f16(p, p2, kDmin);
      // − dmin·Σ_j m_j·x_j.d·Σx_j
      F macc[RA];
      for (int a = 0; a < RA; ++a) macc[a] = V::zero_f();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const F mf = V::cvt(V::u8(p, p2, kMin + R * j));
        for (int a = 0; a < RA; ++a) {
          float xs;
          std::memcpy(&xs, ax[a] + (sb * 8 + j) * 8, 4);
          macc[a] = V::fmadd(mf, V::set1(xs), macc[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = V::fnmadd(dmin, macc[a], acc[a]);
      // + d·Σ_j x_j.d·sc_j·Σ q·x
      F accsb[RA];
      for (int a = 0; a < RA; ++a) accsb[a] = V::zero_f();
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const int qc = kQ + c * 32 * R;
        if constexpr (V::kMadd16) {
          // 16-bit sums of G products: G·2·qmax·127 < 2¹⁵ (Q4_K: 8·3810, Q5_K: 4·7874);
          // each widened by one vpmaddwd against the sub-block's scale in both halves
          // of a lane, ≤ 2·30480·63 (Q5_K 2·2·31496·63) in int32.
          constexpr int G = k5 ? 4 : 8;
          I s0, s1, s01;
          V::template scale_pairs<false>(p, kSc + R * 2 * c, s0, s1, s01);
          I slo[RA], shi[RA], dlo[RA], dhi[RA];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            I lo, hi;
            unpack<V>(p, p2, qc, c, i, low4, &lo, &hi);
            for (int a = 0; a < RA; ++a) {
              const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
              const I pl = V::maddubs(lo, V::set32(load_i32(xb[0].q + 4 * i)));
              const I ph = V::maddubs(hi, V::set32(load_i32(xb[1].q + 4 * i)));
              slo[a] = i % G == 0 ? pl : V::add16(slo[a], pl);
              shi[a] = i % G == 0 ? ph : V::add16(shi[a], ph);
              if (i % G == G - 1) {
                dlo[a] = i == G - 1 ? V::madd(slo[a], s0) : V::add32(dlo[a], V::madd(slo[a], s0));
                dhi[a] = i == G - 1 ? V::madd(shi[a], s1) : V::add32(dhi[a], V::madd(shi[a], s1));
              }
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
          I lo, hi;
          unpack<V>(p, p2, qc, c, i, low4, &lo, &hi);
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
            dlo[a][i % S] = V::dot(dlo[a][i % S], lo, V::set32(load_i32(xb[0].q + 4 * i)));
            dhi[a][i % S] = V::dot(dhi[a][i % S], hi, V::set32(load_i32(xb[1].q + 4 * i)));
          }
        }
        const I sc0 = V::u8(p, p2, kSc + R * 2 * c), sc1 = V::u8(p, p2, kSc + R * (2 * c + 1));
        for (int a = 0; a < RA; ++a) {
          const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
          I l = dlo[a][0], h = dhi[a][0];
          if constexpr (S == 2) l = V::add32(l, dlo[a][1]), h = V::add32(h, dhi[a][1]);
          accsb[a] = V::fmadd(V::cvt(V::mul32(l, sc0)), V::set1(xb[0].d), accsb[a]);
          accsb[a] = V::fmadd(V::cvt(V::mul32(h, sc1)), V::set1(xb[1].d), accsb[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = V::fmadd(accsb[a], d, acc[a]);
    }
  }
};

template <int R>
using PanelQ4K = PanelQK<false, R>;
template <int R>
using PanelQ5K = PanelQK<true, R>;

template <int R>
struct PanelQ6K {
  using B = BlockQ6_K;
  static constexpr WeightType kRegType = WeightType::q6_k;
  static constexpr int kRows = R;
  static constexpr int kD = 0, kSc = 2 * R;  // f16[R], s8[16][R]
  static constexpr int kHead = 18 * R;
  static constexpr int kLo = kHead;               // [4 pairs][8 i][R rows][4 bytes]
  static constexpr int kHiQ = kLo + R * kQKK / 2;  // [2 quads][8 i][R rows][4 bytes]
  static constexpr int kBytes = kHiQ + R * kQKK / 4;
  // Per activation block: −32·Σx of each half (int32), the dots' starting values.
  static void aux(const BlockQ8A& x, uint8_t* out) {
    const int32_t o[2] = {-32 * x.sum[0], -32 * x.sum[1]};
    std::memcpy(out, o, 8);
  }
  // Element e of a Q6_K block (q6_k_scalar.cpp's layout).
  static int q_at(const B& b, int e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t lo = b.ql[64 * h + 32 * (g & 1) + l];
    return (g < 2 ? (lo & 0xF) : (lo >> 4)) | (((b.qh[32 * h + l] >> (2 * g)) & 3) << 4);
  }
  static void pack(const B* const* rows, uint8_t* out) {
    auto* d = reinterpret_cast<uint16_t*>(out + kD);
    auto* sc = reinterpret_cast<int8_t*>(out + kSc);
    uint8_t *lo = out + kLo, *hi = out + kHiQ;
    for (int r = 0; r < R; ++r) {
      if (!rows[r]) continue;
      const B& b = *rows[r];
      d[r] = b.d;
      for (int j = 0; j < 16; ++j) sc[R * j + r] = b.scales[j];
      for (int e = 0; e < kQKK; ++e) {
        const int q = q_at(b, e), j = e / 32, i = (e % 32) / 4, t = e % 4;
        lo[((j / 2 * 8 + i) * R + r) * 4 + t] |= uint8_t((q & 0xF) << (4 * (j & 1)));
        hi[((j / 4 * 8 + i) * R + r) * 4 + t] |= uint8_t((q >> 4) << (2 * (j % 4)));
      }
    }
  }

  // Rows r0 .. r0 + 7 (r0 a multiple of 8) of the super-block at p, whose first element
  // is e0, into sink: the values dequantize_q6_k computes, d·sc·(q − 32) (exact in
  // fp32); 8 rows' values of 8 consecutive elements at a time.
  template <class Sink>
  static void unpack8(const uint8_t* p, int r0, int64_t e0, Sink&& sink) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kD + 2 * r0)));
    const __m256i nib = _mm256_set1_epi32(0xF), two = _mm256_set1_epi32(3), off = _mm256_set1_epi32(32);
    for (int j = 0; j < 8; ++j) {  // block j: sub-blocks of 16 2j and 2j + 1
      __m256 D[2];
      for (int h = 0; h < 2; ++h)
        D[h] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + kSc + R * (2 * j + h) + r0)))));
      for (int i = 0; i < 8; i += 2) {  // elements 4i .. 4i + 7 of the block
        __m256 v[8];
        for (int ii = 0; ii < 2; ++ii) {
          const __m256i lo = load32(p + kLo + ((j / 2 * 8 + i + ii) * R + r0) * 4);
          const __m256i hi = load32(p + kHiQ + ((j / 4 * 8 + i + ii) * R + r0) * 4);
          for (int t = 0; t < 4; ++t) {
            const __m256i l = _mm256_and_si256(_mm256_srli_epi32(lo, 8 * t + 4 * (j & 1)), nib);
            const __m256i u = _mm256_and_si256(_mm256_srli_epi32(hi, 8 * t + 2 * (j % 4)), two);
            const __m256i q = _mm256_sub_epi32(_mm256_or_si256(l, _mm256_slli_epi32(u, 4)), off);
            v[4 * ii + t] = _mm256_mul_ps(D[i / 4], _mm256_cvtepi32_ps(q));
          }
        }
        sink(v, e0 + 32 * j + 4 * i);
      }
    }
  }
  // Group i of block j (32 weights) at p: its 6-bit weights, one a byte — the low nibble
  // from the pair's vector, the top bits 2k, 2k + 1 of the quad's (k = j % 4) at bits 4-5.
  template <class V>
  static typename V::I block_weights(const uint8_t* p, int64_t p2, int j, int i, typename V::I low4) {
    using I = typename V::I;
    const int lj = kLo + (j / 2) * 32 * R, hj = kHiQ + (j / 4) * 32 * R, k = j % 4;
    const I l = V::load(p, p2, lj + 4 * R * i), h = V::load(p, p2, hj + 4 * R * i);
    const I l4 = V::and_(j & 1 ? V::srl16(l, 4) : l, low4);
    const I hs = k == 0 ? V::sll16(h, 4) : k == 1 ? V::sll16(h, 2) : k == 2 ? h : V::srl16(h, 2);
    return V::merge45(l4, hs);
  }

  template <class V, int RA>
  static void tile(const uint8_t* p, int64_t p2, int64_t nsb, const BlockQ8A* const* x, const uint8_t* const* ax,
                   typename V::F* acc) {
    static_assert(V::kPanelRows == R, "the vector's panels are this layout's");
    using I = typename V::I;
    using F = typename V::F;
    const I low4 = V::set8(0xF);
    for (int64_t sb = 0; sb < nsb; ++sb, p += kBytes) {
      if constexpr (V::kMadd16) {
        if constexpr (RA == 1) V::stream_ahead(p, kBytes);
      } else {
        V::ahead_span(p, p2, 0, kHead);
      }
      const F d = V::f16(p, p2, kD);
      F accsb[RA];
      for (int a = 0; a < RA; ++a) accsb[a] = V::zero_f();
      if constexpr (V::kMadd16) {
        // Without VNNI (see V8::kMadd16): per block, pairs of products added in 16 bits
        // (2·2·63·127 < 2¹⁵) and widened by one vpmaddwd against the sub-block's scale
        // in both halves of a lane; the offset −32·Σx as one vpmaddwd of the two
        // sub-blocks' scales against the input's two half sums (blocks.hpp), times 32.
        // Each block loads its vectors (the quad path below shares them): on this path
        // the one multiply pipe, not the loads, bounds the loop.
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          I s0, s1, s01;
          V::template scale_pairs<true>(p, kSc + R * 2 * j, s0, s1, s01);
          I t[RA], dsum[RA];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I qv = block_weights<V>(p, p2, j, i, low4);
            for (int a = 0; a < RA; ++a) {
              const I pr = V::maddubs(qv, V::set32(load_i32(x[a][sb * 8 + j].q + 4 * i)));
              t[a] = i % 2 == 0 ? pr : V::add16(t[a], pr);
              if (i % 2 == 1) {
                const I w = V::madd(t[a], i < 4 ? s0 : s1);
                dsum[a] = i == 1 ? w : V::add32(dsum[a], w);
              }
            }
          }
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A& xb = x[a][sb * 8 + j];
            const I off = V::madd(s01, V::set32(load_i32(xb.sum)));
            accsb[a] = V::fmadd(V::cvt(V::sub32(dsum[a], V::sll32(off, 5))), V::set1(xb.d), accsb[a]);
          }
        }
        for (int a = 0; a < RA; ++a) acc[a] = V::fmadd(accsb[a], d, acc[a]);
        continue;
      } else if constexpr (RA == 1) {
        // Decode: the four blocks 4u .. 4u + 3 together, so each high-bit vector is
        // loaded once for its four blocks and each low-nibble vector once for its two
        // (the loop below, for RA rows, loads them per block: 8 loads where this has 3).
        for (int u = 0; u < 2; ++u) {
          const int la = kLo + 2 * u * 32 * R, lb = la + 32 * R, hq = kHiQ + u * 32 * R;
          V::ahead_span(p, p2, la, 64 * R);
          V::ahead_span(p, p2, hq, 32 * R);
          const uint8_t* o4 = ax[0] + (sb * 8 + 4 * u) * 8;
          I dl[4], dh[4];
          for (int k = 0; k < 4; ++k) dl[k] = V::set32(load_i32(o4 + 8 * k)), dh[k] = V::set32(load_i32(o4 + 8 * k + 4));
          const BlockQ8A* xb = x[0] + sb * 8 + 4 * u;
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I h = V::load(p, p2, hq + 4 * R * i), l0 = V::load(p, p2, la + 4 * R * i), l1 = V::load(p, p2, lb + 4 * R * i);
            // block 4u + k: its low nibble from l0 or l1, its top bits 2k, 2k + 1 of h moved to bits 4, 5
            const I q[4] = {V::merge45(V::and_(l0, low4), V::sll16(h, 4)),
                            V::merge45(V::and_(V::srl16(l0, 4), low4), V::sll16(h, 2)),
                            V::merge45(V::and_(l1, low4), h),
                            V::merge45(V::and_(V::srl16(l1, 4), low4), V::srl16(h, 2))};
            for (int k = 0; k < 4; ++k) {
              I& dk = i < 4 ? dl[k] : dh[k];
              dk = V::dot(dk, q[k], V::set32(load_i32(xb[k].q + 4 * i)));
            }
          }
          for (int k = 0; k < 4; ++k) {
            const int j = 4 * u + k;
            const I s0 = V::s8(p, p2, kSc + R * 2 * j), s1 = V::s8(p, p2, kSc + R * (2 * j + 1));
            const I sum = V::add32(V::mul32(dl[k], s0), V::mul32(dh[k], s1));
            accsb[0] = V::fmadd(V::cvt(sum), V::set1(xb[k].d), accsb[0]);
          }
        }
        acc[0] = V::fmadd(accsb[0], d, acc[0]);
        continue;
      }
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int lj = kLo + (j / 2) * 32 * R, hj = kHiQ + (j / 4) * 32 * R;
        if ((j & 1) == 0) V::ahead_span(p, p2, lj, 32 * R);
        if ((j & 3) == 0) V::ahead_span(p, p2, hj, 32 * R);
        I dlo[RA], dhi[RA];
        for (int a = 0; a < RA; ++a) {
          const uint8_t* o = ax[a] + (sb * 8 + j) * 8;
          dlo[a] = V::set32(load_i32(o));
          dhi[a] = V::set32(load_i32(o + 4));
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          const I qv = block_weights<V>(p, p2, j, i, low4);
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A& xb = x[a][sb * 8 + j];
            if (i < 4) dlo[a] = V::dot(dlo[a], qv, V::set32(load_i32(xb.q + 4 * i)));
            else dhi[a] = V::dot(dhi[a], qv, V::set32(load_i32(xb.q + 4 * i)));
          }
        }
        const I s0 = V::s8(p, p2, kSc + R * 2 * j), s1 = V::s8(p, p2, kSc + R * (2 * j + 1));
        for (int a = 0; a < RA; ++a) {
          const I sum = V::add32(V::mul32(dlo[a], s0), V::mul32(dhi[a], s1));
          accsb[a] = V::fmadd(V::cvt(sum), V::set1(x[a][sb * 8 + j].d), accsb[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = V::fmadd(accsb[a], d, acc[a]);
    }
  }
};

// Q3_K in panels of R rows: per super-block d[R] f16, sc[16][R] s8 (sc_j − 32 decoded at
// repack), lo[2 halves][8 groups][R][4 bytes] (GGUF qs[32h + 4i + t]: bits 2k, 2k + 1 the
// low bits of block 4h + k's element 4i + t) and hb[8 groups][R][4 bytes] (GGUF
// hmask[4i + t]: bit j block j's 3rd bit): 114·R bytes for R rows' 110·R. A weight's
// byte is q = lo | hb·4 ∈ [0, 7] (x = d·sc·(q − 4)), so a dot is vpdpbusd on u8 as Q6_K's,
// started at −4·Σx per half (the aux bytes); scales as Q6_K's (int8 per 16).
template <int R>
struct PanelQ3K {
  using B = BlockQ3_K;
  static constexpr WeightType kRegType = WeightType::q3_k;
  static constexpr int kRows = R;
  static constexpr int kD = 0, kSc = 2 * R;  // f16[R], s8[16][R]
  static constexpr int kHead = 18 * R;
  static constexpr int kLo = kHead;               // [2 halves][8 i][R rows][4 bytes]
  static constexpr int kHb = kLo + R * kQKK / 4;  // [8 i][R rows][4 bytes]
  static constexpr int kBytes = kHb + R * kQKK / 8;
  // Per activation block: −4·Σx of each half (int32), the dots' starting values.
  static void aux(const BlockQ8A& x, uint8_t* out) {
    const int32_t o[2] = {-4 * x.sum[0], -4 * x.sum[1]};
    std::memcpy(out, o, 8);
  }
  static void pack(const B* const* rows, uint8_t* out) {
    auto* d = reinterpret_cast<uint16_t*>(out + kD);
    auto* sc = reinterpret_cast<int8_t*>(out + kSc);
    for (int r = 0; r < R; ++r) {
      if (!rows[r]) continue;
      const B& b = *rows[r];
      d[r] = b.d;
      for (int j = 0; j < 16; ++j) sc[R * j + r] = int8_t(q3_k_scale(b.scales, j));
      for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 8; ++i) std::memcpy(out + kLo + ((h * 8 + i) * R + r) * 4, b.qs + 32 * h + 4 * i, 4);
      for (int i = 0; i < 8; ++i) std::memcpy(out + kHb + (i * R + r) * 4, b.hmask + 4 * i, 4);
    }
  }
  // Rows r0 .. r0 + 7 (r0 a multiple of 8) of the super-block at p, whose first element
  // is e0, into sink: the values dequantize_q3_k computes, d·sc·(q − 4) (exact in fp32);
  // 8 rows' values of 8 consecutive elements at a time.
  template <class Sink>
  static void unpack8(const uint8_t* p, int r0, int64_t e0, Sink&& sink) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kD + 2 * r0)));
    const __m256i three = _mm256_set1_epi32(3), one = _mm256_set1_epi32(1), off = _mm256_set1_epi32(4);
    for (int j = 0; j < 8; ++j) {  // block j: sub-blocks of 16 2j and 2j + 1
      __m256 D[2];
      for (int h = 0; h < 2; ++h)
        D[h] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + kSc + R * (2 * j + h) + r0)))));
      for (int i = 0; i < 8; i += 2) {  // elements 4i .. 4i + 7 of the block
        __m256 v[8];
        for (int ii = 0; ii < 2; ++ii) {
          const __m256i lo = load32(p + kLo + ((j / 4 * 8 + i + ii) * R + r0) * 4);
          const __m256i hb = load32(p + kHb + ((i + ii) * R + r0) * 4);
          for (int t = 0; t < 4; ++t) {
            const __m256i l = _mm256_and_si256(_mm256_srli_epi32(lo, 8 * t + 2 * (j % 4)), three);
            const __m256i u = _mm256_and_si256(_mm256_srli_epi32(hb, 8 * t + j), one);
            const __m256i q = _mm256_sub_epi32(_mm256_or_si256(l, _mm256_slli_epi32(u, 2)), off);
            v[4 * ii + t] = _mm256_mul_ps(D[i / 4], _mm256_cvtepi32_ps(q));
          }
        }
        sink(v, e0 + 32 * j + 4 * i);
      }
    }
  }
  // Block j's 3rd bits (bit j of every byte of the group's hb vector h) moved to bit 2
  // (the merge masks the rest).
  template <class V>
  static typename V::I bit_to_2(typename V::I h, int j) {
    return j < 2 ? V::sll16(h, 2 - j) : j == 2 ? h : V::srl16(h, j - 2);
  }
  // Group i of block j (32 weights) at p: its 3-bit weights, one a byte.
  template <class V>
  static typename V::I block_weights(const uint8_t* p, int64_t p2, int j, int i, typename V::I low2) {
    using I = typename V::I;
    const I l = V::load(p, p2, kLo + (j / 4) * 32 * R + 4 * R * i), h = V::load(p, p2, kHb + 4 * R * i);
    const int k = j % 4;
    return V::merge2(V::and_(k ? V::srl16(l, 2 * k) : l, low2), bit_to_2<V>(h, j));
  }

  template <class V, int RA>
  static void tile(const uint8_t* p, int64_t p2, int64_t nsb, const BlockQ8A* const* x, const uint8_t* const* ax,
                   typename V::F* acc) {
    static_assert(V::kPanelRows == R, "the vector's panels are this layout's");
    using I = typename V::I;
    using F = typename V::F;
    const I low2 = V::set8(0x03);
    for (int64_t sb = 0; sb < nsb; ++sb, p += kBytes) {
      if constexpr (V::kMadd16) {
        if constexpr (RA == 1) V::stream_ahead(p, kBytes);
      } else {
        V::ahead_span(p, p2, 0, kHead);
        V::ahead_span(p, p2, kHb, 32 * R);
      }
      const F d = V::f16(p, p2, kD);
      F accsb[RA];
      for (int a = 0; a < RA; ++a) accsb[a] = V::zero_f();
      if constexpr (V::kMadd16) {
        // Without VNNI (see V8::kMadd16): per half block, 4 products added in 16 bits
        // (4·2·7·127 < 2¹⁵) and widened by one vpmaddwd against the sub-block's scale
        // in both halves of a lane; the offset −4·Σx as one vpmaddwd of the two
        // sub-blocks' scales against the input's two half sums, times 4.
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          I s0, s1, s01;
          V::template scale_pairs<true>(p, kSc + R * 2 * j, s0, s1, s01);
          I t[RA], dsum[RA];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I qv = block_weights<V>(p, p2, j, i, low2);
            for (int a = 0; a < RA; ++a) {
              const I pr = V::maddubs(qv, V::set32(load_i32(x[a][sb * 8 + j].q + 4 * i)));
              t[a] = i % 4 == 0 ? pr : V::add16(t[a], pr);
              if (i % 4 == 3) {
                const I w = V::madd(t[a], i < 4 ? s0 : s1);
                dsum[a] = i == 3 ? w : V::add32(dsum[a], w);
              }
            }
          }
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A& xb = x[a][sb * 8 + j];
            const I off = V::madd(s01, V::set32(load_i32(xb.sum)));
            accsb[a] = V::fmadd(V::cvt(V::sub32(dsum[a], V::sll32(off, 2))), V::set1(xb.d), accsb[a]);
          }
        }
        for (int a = 0; a < RA; ++a) acc[a] = V::fmadd(accsb[a], d, acc[a]);
        continue;
      } else if constexpr (RA == 1) {
        // Decode: the four blocks 4u .. 4u + 3 together, so each low-bit vector is loaded
        // once for its four blocks (the loop below, for RA rows, loads it per block).
        for (int u = 0; u < 2; ++u) {
          const int la = kLo + u * 32 * R;
          V::ahead_span(p, p2, la, 32 * R);
          const uint8_t* o4 = ax[0] + (sb * 8 + 4 * u) * 8;
          I dl[4], dh[4];
          for (int k = 0; k < 4; ++k) dl[k] = V::set32(load_i32(o4 + 8 * k)), dh[k] = V::set32(load_i32(o4 + 8 * k + 4));
          const BlockQ8A* xb = x[0] + sb * 8 + 4 * u;
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            const I l = V::load(p, p2, la + 4 * R * i), h = V::load(p, p2, kHb + 4 * R * i);
            for (int k = 0; k < 4; ++k) {
              const I q = V::merge2(V::and_(k ? V::srl16(l, 2 * k) : l, low2), bit_to_2<V>(h, 4 * u + k));
              I& dk = i < 4 ? dl[k] : dh[k];
              dk = V::dot(dk, q, V::set32(load_i32(xb[k].q + 4 * i)));
            }
          }
          for (int k = 0; k < 4; ++k) {
            const int j = 4 * u + k;
            const I s0 = V::s8(p, p2, kSc + R * 2 * j), s1 = V::s8(p, p2, kSc + R * (2 * j + 1));
            const I sum = V::add32(V::mul32(dl[k], s0), V::mul32(dh[k], s1));
            accsb[0] = V::fmadd(V::cvt(sum), V::set1(xb[k].d), accsb[0]);
          }
        }
        acc[0] = V::fmadd(accsb[0], d, acc[0]);
        continue;
      }
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        if ((j & 3) == 0) V::ahead_span(p, p2, kLo + (j / 4) * 32 * R, 32 * R);
        I dlo[RA], dhi[RA];
        for (int a = 0; a < RA; ++a) {
          const uint8_t* o = ax[a] + (sb * 8 + j) * 8;
          dlo[a] = V::set32(load_i32(o));
          dhi[a] = V::set32(load_i32(o + 4));
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          const I qv = block_weights<V>(p, p2, j, i, low2);
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A& xb = x[a][sb * 8 + j];
            if (i < 4) dlo[a] = V::dot(dlo[a], qv, V::set32(load_i32(xb.q + 4 * i)));
            else dhi[a] = V::dot(dhi[a], qv, V::set32(load_i32(xb.q + 4 * i)));
          }
        }
        const I s0 = V::s8(p, p2, kSc + R * 2 * j), s1 = V::s8(p, p2, kSc + R * (2 * j + 1));
        for (int a = 0; a < RA; ++a) {
          const I sum = V::add32(V::mul32(dlo[a], s0), V::mul32(dhi[a], s1));
          accsb[a] = V::fmadd(V::cvt(sum), V::set1(x[a][sb * 8 + j].d), accsb[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = V::fmadd(accsb[a], d, acc[a]);
    }
  }
};

// A vector type V passed as a value (to a generic lambda).
template <class V>
struct VecTag {
  using type = V;
};

// The registry entry of panel type P: tiles of one vector V (V8: a panel; V16x2: two
// 8-row panels; V16Far: a 16-row panel) × RA input rows in prefill, × 1 in decode; V1
// (V8<D>) for a last 8-row panel left alone by V16x2.
// kVnniBf16: the entry is an avx512 one (declines without AVX512-VNNI/BF16, as QuantLinear).
template <class P, class V, class V1, int RA, bool kVnniBf16>
struct PanelKLinear {
  static_assert(V::kPanelRows == P::kRows && V1::kPanelRows == P::kRows, "the vectors read P's panels");
  static constexpr int kRows = P::kRows;               // rows per panel
  static constexpr int kUnit = V::kRows / P::kRows;    // panels per tile
  static constexpr int kAux = 8;  // aux bytes per activation block
  // Input rows per pass over a thread's panels: 64 rows of K ≤ 2048 (their int8 blocks and
  // aux bytes, 160 KiB) stay in L2 while the panels stream past them once per pass.
  static constexpr int kChunkRows = 64;
  static int64_t panels(const PackedWeights& w) { return (int64_t(w.N) + kRows - 1) / kRows; }
  static size_t panel_bytes(const PackedWeights& w) { return size_t(w.K / kQKK) * P::kBytes; }
  static bool supports(const PackedWeights& w) {
    if (kVnniBf16 && !cpu_has_avx512_vnni_bf16()) return false;
    return w.type == P::kRegType && w.data && w.NB == 1 && w.K % kQKK == 0 &&
           w.row_bytes == int64_t(w.K / kQKK) * int64_t(sizeof(typename P::B));
  }
  static size_t repacked_bytes(const PackedWeights& w) { return size_t(panels(w)) * panel_bytes(w); }
  // Panels n0/kRows .. ⌈n1/kRows⌉ − 1 (n0 a multiple of kRows; rows ≥ n1 of the last one: only when n1 = N).
  static void repack(const PackedWeights& w, int64_t n0, int64_t n1, void* dst) {
    using B = typename P::B;
    const int64_t nsb = w.K / kQKK;
    for (int64_t pn = n0 / kRows; pn * kRows < n1; ++pn) {
      uint8_t* out = static_cast<uint8_t*>(dst) + size_t(pn) * panel_bytes(w);
      std::memset(out, 0, panel_bytes(w));
      for (int64_t sb = 0; sb < nsb; ++sb) {
        const B* rows[kRows];
        for (int r = 0; r < kRows; ++r) {
          const int64_t n = pn * kRows + r;
          rows[r] = n < n1 ? reinterpret_cast<const B*>(static_cast<const uint8_t*>(w.data) + size_t(n) * w.row_bytes) + sb
                           : nullptr;
        }
        P::pack(rows, out + size_t(sb) * P::kBytes);
      }
    }
  }
  static size_t act_bytes(int K) { return (size_t(K / kQK) * sizeof(BlockQ8A) + 63) / 64 * 64; }
  static size_t aux_bytes(int K) { return (size_t(K / kQK) * kAux + 63) / 64 * 64; }
  static size_t scratch_bytes(const PackedWeights& w, int rows) { return size_t(rows) * (act_bytes(w.K) + aux_bytes(w.K)); }

  // y rows m .. m + R − 1, outputs of panels pn .. pn + VT::kRows / kRows − 1.
  template <class VT, int R>
  static void tile(const PackedWeights& w, int64_t pn, const uint8_t* xa, const uint8_t* xx, int m,
                   const float* bias, float* y, int64_t ldy) {
    using F = typename VT::F;
    constexpr int kOut = VT::kRows;
    const size_t ab = act_bytes(w.K), xb = aux_bytes(w.K);
    const BlockQ8A* x[R];
    const uint8_t* ax[R];
    for (int a = 0; a < R; ++a) {
      x[a] = reinterpret_cast<const BlockQ8A*>(xa + size_t(m + a) * ab);
      ax[a] = xx + size_t(m + a) * xb;
    }
    F acc[R];
    for (int a = 0; a < R; ++a) acc[a] = VT::zero_f();
    P::template tile<VT, R>(static_cast<const uint8_t*>(w.data) + size_t(pn) * panel_bytes(w),
                            int64_t(panel_bytes(w)), w.K / kQKK, x, ax, acc);
    const int64_t n = pn * kRows;
    const int valid = int(std::min<int64_t>(kOut, w.N - n));
    const F bv = bias && valid == kOut ? VT::loadf(bias + n) : VT::zero_f();
    for (int a = 0; a < R; ++a) {
      float* yr = y + (m + a) * ldy + n;
      if (valid == kOut) {
        VT::storef(yr, VT::add(acc[a], bv));
      } else {
        alignas(64) float t[kOut];
        VT::storef(t, acc[a]);
        for (int r = 0; r < valid; ++r) yr[r] = t[r] + (bias ? bias[n + r] : 0.0f);
      }
    }
  }
  // Input rows [m0, m1) against panels pn .. pn + VT::kRows / kRows − 1 of tile type VT.
  template <class VT>
  static void rows_of(const PackedWeights& w, int64_t pn, const uint8_t* xa, const uint8_t* xx, int m0, int m1,
                      const float* bias, float* y, int64_t ldy) {
    int m = m0;
    for (; m + RA <= m1; m += RA) tile<VT, RA>(w, pn, xa, xx, m, bias, y, ldy);
    for (; m + 4 <= m1 && RA > 4; m += 4) tile<VT, (RA > 4 ? 4 : 1)>(w, pn, xa, xx, m, bias, y, ldy);
    for (; m + 2 <= m1 && RA > 2; m += 2) tile<VT, (RA > 2 ? 2 : 1)>(w, pn, xa, xx, m, bias, y, ldy);
    for (; m < m1; ++m) tile<VT, 1>(w, pn, xa, xx, m, bias, y, ldy);
  }

  // run(), prepare(), run_prepared(): StepsEntry (gemv_rows.hpp) over steps().
  static void steps(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y,
                    int64_t ldy, int rows, int threads, void* scratch, Steps part) {
    auto* xa = static_cast<uint8_t*>(scratch);
    uint8_t* xx = xa + size_t(rows) * act_bytes(w.K);
    const size_t ab = act_bytes(w.K), xb = aux_bytes(w.K);
    const int64_t np = panels(w), nu = (np + kUnit - 1) / kUnit;  // units: kUnit panels (the last may be fewer)
    const int nt = int(std::max<int64_t>(1, std::min<int64_t>(threads, std::max<int64_t>(nu, rows))));
    auto prepare = [&](int r) {
      prepare_q8a(x + r * ldx, reinterpret_cast<BlockQ8A*>(xa + r * ab), w.K);
      const auto* blocks = reinterpret_cast<const BlockQ8A*>(xa + r * ab);
      for (int b = 0; b < w.K / kQK; ++b) P::aux(blocks[b], xx + r * xb + b * kAux);
    };
    // tag: a VecTag naming the vector of the whole units (V, or in decode NtaOf<V>'s).
    auto share_with = [&](auto tag, int t, int n) {
      using VM = typename decltype(tag)::type;
      const int64_t u0 = nu * t / n, u1 = nu * (t + 1) / n;
      for (int m0 = 0; m0 < rows; m0 += kChunkRows) {
        const int m1 = std::min(rows, m0 + kChunkRows);
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t pn = u * kUnit;
          if (pn + kUnit <= np) rows_of<VM>(w, pn, xa, xx, m0, m1, bias, y, ldy);
          else
            for (int64_t q = pn; q < np; ++q) rows_of<V1>(w, q, xa, xx, m0, m1, bias, y, ldy);
        }
      }
    };
    using VN = typename NtaOf<V>::T;
    const bool nta = !std::is_same_v<VN, V> && rows == 1 && cpu_decode_nontemporal(Isa::avx512);
    auto share = [&](int t, int n) {
      if (nta) share_with(VecTag<VN>{}, t, n);
      else share_with(VecTag<V>{}, t, n);
    };
    prepare_then_share(rows, nt, prepare, share, part);
  }
  // Rows n .. n + 7 (n a multiple of 8; past N the panels' zero padding) into sink, a
  // super-block at a time.
  template <class Sink>
  static void dequant8(const PackedWeights& w, int64_t n, Sink&& sink) {
    const uint8_t* panel = static_cast<const uint8_t*>(w.data) + size_t(n / kRows) * panel_bytes(w);
    for (int64_t sb = 0; sb < w.K / kQKK; ++sb) P::unpack8(panel + size_t(sb) * P::kBytes, int(n % kRows), sb * kQKK, sink);
  }
  // Rows [n0, n1) of the panels into bf16 rows ldo apart.
  static void dequant_bf16(const PackedWeights& w, int64_t n0, int64_t n1, uint16_t* out, int64_t ldo) {
    for (int64_t n = n0; n < n1; n += 8)
      dequant8(w, n, Bf16RowsSink{out + (n - n0) * ldo, ldo, int(std::min<int64_t>(8, n1 - n))});
  }
  // Rows [n0, n1) (n0 a multiple of 32, n1 − n0 ≤ 32) as one AMX panel.
  static void dequant_amx(const PackedWeights& w, int64_t n0, int64_t n1, uint16_t* panel) {
    for (int q = 0; q < 4; ++q) {
      if (n0 + 8 * q < n1) dequant8(w, n0 + 8 * q, AmxPanelSink{panel, q});
      else zero_amx_group(panel, w.K, q);
    }
  }
  static constexpr LinearKernelImpl impl(const char* name) {
    using E = StepsEntry<PanelKLinear>;
    return {name, 0, supports, scratch_bytes, E::run, repacked_bytes, repack, kRows, dequant_bf16, dequant_amx,
            E::prepare, E::run_prepared};
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
