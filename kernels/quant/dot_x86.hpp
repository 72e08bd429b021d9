// The x86 building blocks of the weight types' products (AVX2 and AVX-512 translation
// units): the 8-bit multiply the panel kernels (interleave_x86.hpp, panel_k_x86.hpp) are
// templated on, AVX2's vpmaddubsw + vpmaddwd or AVX512-VNNI's vpdpbusd, both unsigned
// bytes by signed bytes into 32-bit lane sums of 4 products; and the small helpers the
// f16/bf16 row products use too.
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include <immintrin.h>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"

namespace headwise::kernels::quant {
namespace {

// Σ of groups of 4 u8·s8 products per 32-bit lane. vpmaddubsw saturates its 16-bit
// pair sums: every caller keeps u ≤ 128 and |s| ≤ 127 (2·128·127 < 2¹⁵).
struct MaddAvx2 {
  static constexpr bool kWideU8 = false;  // u8 operands must stay ≤ 128
  static constexpr bool kZmm = false;
  static inline __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static inline __m256i dot_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_add_epi32(acc, dot(u, s)); }
};
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
struct DpbusdVnni {
  static constexpr bool kWideU8 = true;  // no 16-bit intermediate: any u8 operand
  // The panel kernels take two 8-row panels per zmm instruction: at AVX-512's 256-bit
  // rate that is the same arithmetic in half the instructions.
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
// Ask for the weights kAheadBytes ahead into L1 and kFarBytes ahead into L2: the
// hardware prefetcher alone ramps up too slowly on the 0.3-10 MB matrices of a decode
// step (as in kernels/matmul/gemv). The far request keeps enough reads in flight to
// cover DRAM latency at the bandwidth; it is what made llama-134m Q4_K_M's 84 small
// projections per token stream faster: decode linear time 465-635 -> 374-475 ms and
// the Q6_K classifier 144-183 -> 93-120 ms over 192 steps (headwise bench, 2 threads,
// 3 alternating rounds, loaded machine), with quant_bench decode_stream (1b-like layers)
// as fast or faster. One distance into L1 only: 8192 helped the small matrices as much
// but slowed decode_stream's large ones by up to 30%; 32768 into L2 helped less.
constexpr int kAheadBytes = 2048;
constexpr int kFarBytes = 16384;
inline void ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kAheadBytes, _MM_HINT_T0);
  _mm_prefetch(static_cast<const char*>(p) + kFarBytes, _MM_HINT_T1);
}
// The 8-row panels of Q8_0 and Q4_0 (interleave_x86.hpp), read front to back: one
// non-temporal request 8 KiB ahead (as peak_probe's read loop) instead.
constexpr int kNtaBytes = 8192;
inline void ahead_nta(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kNtaBytes, _MM_HINT_NTA); }

}  // namespace
}  // namespace headwise::kernels::quant
