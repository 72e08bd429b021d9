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
// BF16 rows on AVX-512 (bf16_avx512.cpp) take ahead() everywhere but Zen 5 (there one
// non-temporal request 8 KiB ahead: faster in every round; on Intel 3x slower, see there). Until
// session 19 every host took that request, chosen on the Zen 5 host (768 x 32000 rows 46-49 ->
// 51-52 GB/s, llama-134m BF16 decode 186-194 -> 205-212 tok/s) while decode attention
// read the 16-bit cache out of order, as did the Q8_0/Q4_0 panels until session 18. With
// the tiled cache, on Zen 4 (2 threads, headwise bench --prompt-len 512, 7 alternating
// env-switched rounds): llama-134m BF16 decode 106-124 -> 115-141 tok/s, projections
// 731-885 -> 628-758 ms over 128 steps (one non-temporal round at 1318 left out), and
// ahead() was the faster in 6 of the 7.
// Only ahead()'s far request, into L2: the Q8_0/Q4_0 zmm pairs (interleave_x86.hpp) and
// Q6_K's 16-row panels (panel_k_x86.hpp), whose decode loops issue more loads a byte than
// the others; the L1 request a line cost them more than it won (session 19, Zen 4,
// 2 threads, headwise bench --prompt-len 512, alternating env-switched rounds):
// llama-134m Q8_0 decode 160-178 -> 184-209 tok/s (projections 485-540 -> 345-406 ms over
// 128 steps, 3 rounds), Q4_0 within noise (projections 182-269 against 186-200 ms, 7
// rounds); llama-1b-like Q4_K_M's Q6_K classifier 133-150 -> 115-119 ms over 64 steps,
// all its projections 1313-1414 -> 1278-1330. The Q4_K/Q5_K pairs measured the other way
// (far requests alone: projections 1342-1410 against 1091-1365 ms) and keep ahead(), as
// do BF16 rows (far alone: projections 645-784 ms in 3 rounds against ahead()'s 649-694).
inline void ahead_far(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kFarBytes, _MM_HINT_T1); }
// One non-temporal request a line 8 KiB ahead (the peak probe's read loop): in decode
// (one input row) on hosts where quant::cpu_decode_nontemporal(avx512) holds (AMD, not
// Zen 4), in place of ahead_far for the K-quant 16-row panels (panel_k_x86.hpp's V16Nta),
// and of ahead() for BF16 rows (bf16_avx512.cpp). Session 35, Zen 5 host, 2 threads,
// alternating env-switched rounds (read bandwidth drifting 30-78 GB/s): quant_bench
// decode_stream Q4_K 62-69 -> 71 GB/s and Q6_K 53-56 -> 62-66 (3 rounds; in 4 more, Q6_K
// faster in 3, Q4_K in 2), Q3_K and IQ4_XS faster in 3 of 4, Q2_K level; `headwise bench
// --synthetic llama-1b-like --weights q4_k_m --prompt-len 512 --kv-type f16`: 45-71
// tok/s against 44-69, higher in 4 of 9 rounds, within 2% in 4, lower in 1; llama-134m
// 350-482 against 371-452, higher in 4 of 8, lower in 3 (as a share of the bandwidth
// measured beside it, higher in 6 of 8): a small gain at most, beside this host's drift. The
// Q8_0/Q4_0 zmm pairs keep ahead_far: Q4_0's decode_stream measured the other way (46-52
// against 47-53 GB/s, 4 rounds; 30-40 against 37-48 in 5 more), and Q8_0's, faster
// (28-34 -> 30-44 GB/s, 9 rounds), was not in the model (llama-134m Q8_0 275-309 against
// 270-334 tok/s, 4 rounds; llama-1b-like 33-41 against 39-47, 3). Non-temporal 16 KiB
// ahead was between the two, 8 KiB into L2 slower than both, no request far slower.
constexpr int kNtaBytes = 8192;
inline void ahead_nta(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kNtaBytes, _MM_HINT_NTA); }

// An input row as int8 blocks (ActKind::q8a), exactly as prepare_activations rounds it
// (act.cpp: d = amax / 127, q = round-to-even(x / d) clamped to ±127, which equals the
// clamp then the rounding, the bounds being integers), 32 values in four ymm registers:
// the scalar loop took ~1.5 ns a value, 3 us of a 2048-input product's 50 on one thread.
inline void prepare_q8a(const float* x, BlockQ8A* o, int64_t K) {
  const __m256 sign = _mm256_set1_ps(-0.0f), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < K / kQK; ++b) {
    const float* xb = x + b * kQK;
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i)
      q[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], vid), lo), hi));
    const __m256i q16 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    o[b].d = d;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o[b].q), _mm256_permutevar8x32_epi32(q16, order));
    const __m256i s01 = _mm256_add_epi32(q[0], q[1]), s23 = _mm256_add_epi32(q[2], q[3]);
    // both halves' sums at once: [s01 lanes 0-3 + 4-7 | s23 lanes 0-3 + 4-7], then within
    const __m256i t = _mm256_add_epi32(_mm256_permute2x128_si256(s01, s23, 0x20),
                                       _mm256_permute2x128_si256(s01, s23, 0x31));
    const __m256i u = _mm256_hadd_epi32(t, t);
    const __m256i w = _mm256_hadd_epi32(u, u);
    o[b].sum[0] = int16_t(_mm256_extract_epi32(w, 0));
    o[b].sum[1] = int16_t(_mm256_extract_epi32(w, 4));
  }
}

// 8 floats rounded to bf16 as f32_to_bf16 rounds (to nearest even, a NaN made quiet),
// in integer arithmetic (AVX512-BF16's vcvtneps2bf16 would flush denormal inputs to
// zero): the bf16 bits in the low half of each 32-bit lane, the high half zero.
inline __m256i round_bf16_lanes(const float* p) {
  const __m256i abs = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  const __m256i half = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
  const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i r = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(u, half), _mm256_and_si256(_mm256_srli_epi32(u, 16), one)), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
  return _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet), nan);
}
// 8 finite, normal (or zero) floats stored as 8 bf16 at o, rounded to nearest even as
// f32_to_bf16 rounds: one vcvtneps2bf16 where AVX512-BF16 is compiled in (it flushes
// only denormals, which dequantized weights never are: |d·q| ≥ 2⁻²⁴), else in integers.
inline void store_bf16x8(uint16_t* o, __m256 v) {
#if defined(__AVX512BF16__) && defined(__AVX512VL__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o), reinterpret_cast<__m128i>(_mm256_cvtneps_pbh(v)));
#else
  const __m256i u = _mm256_castps_si256(v);
  const __m256i r = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)),
                       _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1))),
      16);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o),
                   _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
#endif
}

// An input row as bf16 (ActKind::bf16), exactly as f32_to_bf16 rounds.
inline void prepare_bf16(const float* x, uint16_t* o, int64_t K) {
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m256i packed = _mm256_packus_epi32(round_bf16_lanes(x + k), round_bf16_lanes(x + k + 8));  // lanes 0-3 8-11 4-7 12-15
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + k), _mm256_permute4x64_epi64(packed, 0xD8));
  }
  for (; k < K; ++k) o[k] = f32_to_bf16(x[k]);
}

// The same values as fp32 (bf16_to_f32 of them), for products that widen the weights
// and multiply in fp32 (the avx2 BF16 panels, panel_half_avx2.hpp).
inline void round_bf16_f32(const float* x, float* o, int64_t K) {
  int64_t k = 0;
  for (; k + 8 <= K; k += 8)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + k), _mm256_slli_epi32(round_bf16_lanes(x + k), 16));
  for (; k < K; ++k) o[k] = bf16_to_f32(f32_to_bf16(x[k]));
}

// prepare_activations with the x86 row preparations (QuantLinear's Prep).
inline void prepare_x86(ActKind a, const float* x, void* out, int64_t K) {
  if (a == ActKind::bf16) return prepare_bf16(x, static_cast<uint16_t*>(out), K);
  if (a == ActKind::q8a) return prepare_q8a(x, static_cast<BlockQ8A*>(out), K);
  prepare_activations(a, x, out, K);
}

// v[e] (lane r) → v[r] (lane e): an 8 × 8 float transpose.
inline void transpose8(__m256* v) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// Where dequantized weights go (LinearKernelImpl::dequant_bf16 / dequant_amx): 8 rows'
// values of 8 consecutive elements at a time, v[e] lane r = row r's element e0 + e (e0
// a multiple of 8), each finite and normal or zero, rounded to bf16 as f32_to_bf16
// rounds.
// Rows of bf16 (row r at o + r·ldo; `rows` of the 8 stored): transposed 8 × 8.
struct Bf16RowsSink {
  uint16_t* o;
  int64_t ldo;
  int rows;
  void operator()(__m256* v, int64_t e0) const {
    transpose8(v);
    for (int r = 0; r < rows; ++r) store_bf16x8(o + r * ldo + e0, v[r]);
  }
};
// One AMX B panel (kernels/matmul/gemm_bf16_amx.hpp: per 32 values of K two 16 × 16
// tiles of bf16 pairs, panel[((s·2 + c)·16 + t)·32 + 2n + e] = row 16c + n's element
// 32s + 2t + e) whose columns 8q .. 8q + 7 these 8 rows are: lane r is already column
// 8q + r, so each pair of elements is 8 dwords (element 2t in the low half, 2t + 1 in
// the high) stored as they are — no transpose, and no row buffer to pack afterwards.
struct AmxPanelSink {
  uint16_t* panel;
  int q;
  // Where pair 0 of v goes: k = e0 (a multiple of 8) is pair row k % 32 / 2 of step
  // k / 32, i.e. 1024·(k / 32) + 16·(k % 32) elements in — 16·(k + (k & ~31)), in unsigned
  // arithmetic (signed division's fix-ups had been a tenth of the dequantization); its
  // 4 pairs are 4 consecutive tile rows, 32 elements apart.
  uint16_t* first(int64_t e0) const {
    const uint64_t k = uint64_t(e0);
    return panel + 16 * (k + (k & ~uint64_t(31))) + 512 * unsigned(q / 2) + 16 * unsigned(q % 2);
  }
  void operator()(const __m256* v, int64_t e0) const {
    uint16_t* dst = first(e0);
#if defined(__AVX512BF16__) && defined(__AVX512VL__)
    // (The avx512 entries, built with AVX512-BF16: kernels/sources.cmake.) One
    // vcvtne2ps2bf16 rounds both elements of a pair and a word permute interleaves them:
    // 2 instructions a pair against the integer rounding's 11. It reads denormal inputs
    // as zero, which these values never are.
    const __m256i pairs = _mm256_set_epi16(15, 7, 14, 6, 13, 5, 12, 4, 11, 3, 10, 2, 9, 1, 8, 0);
    for (int t = 0; t < 4; ++t) {
      const __m256i both = (__m256i)_mm256_cvtne2ps_pbh(v[2 * t + 1], v[2 * t]);  // v[2t] in words 0-7
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * t), _mm256_permutexvar_epi16(pairs, both));
    }
#else
    const __m256i half = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1), top = _mm256_set1_epi32(int(0xFFFF0000u));
    auto rounded = [&](__m256 x) {  // bf16 in the high half of each lane (RNE), low half garbage
      const __m256i u = _mm256_castps_si256(x);
      return _mm256_add_epi32(_mm256_add_epi32(u, half), _mm256_and_si256(_mm256_srli_epi32(u, 16), one));
    };
    for (int t = 0; t < 4; ++t) {
      const __m256i d = _mm256_or_si256(_mm256_and_si256(rounded(v[2 * t + 1]), top),
                                        _mm256_srli_epi32(rounded(v[2 * t]), 16));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * t), d);
    }
#endif
  }
};

// Columns 8q .. 8q + 7 of an AMX panel of depth K zeroed (rows past the matrix's last).
inline void zero_amx_group(uint16_t* panel, int64_t K, int q) {
  for (int64_t s = 0; s < K / 32; ++s)
    for (int t = 0; t < 16; ++t)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + ((s * 2 + q / 2) * 16 + t) * 32 + 16 * (q % 2)),
                          _mm256_setzero_si256());
}

}  // namespace
}  // namespace headwise::kernels::quant
