// The fp32 FMA tile of the avx2 products that widen their weights to fp32 in registers
// or in an L1 block: RA ≤ 6 input rows × 16 output rows, 12 ymm sums next to the two
// weight vectors of one k and one broadcast input (16 registers). Weights come as groups
// of 16 outputs per k, H::kGroupBytes apart, that H::load widens into two vectors (in
// H's lane order; H::order puts the sums back in row order). Used by the BF16/F16 panels
// (panel_half_avx2.hpp, groups of 16 halves) and Q8_0's prefill (interleave_x86.hpp,
// groups of 16 floats dequantized per K block).
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/quant/dot_x86.hpp"

namespace headwise::kernels::quant {
namespace {

// out[a][0..1] = Σ_{k < nk} x[a][k] · group k, for RA input rows (g: the first group).
// One row (decode): two k per step in two sets of sums (the FMA latency), and a prefetch
// 8 KiB ahead (kStream): non-temporal (kStreamNonTemporal) on AMD, into L1
// (kStreamCached) elsewhere (quant::cpu_decode_nontemporal says why). The sums are locals until the end:
// __m256 may alias the float inputs, so sums kept in the caller's array were stored back
// after every FMA (7 → 17 → 32 GFLOP/s on one Zen 1 core, BF16 128 rows of 2048²).
enum StreamKind { kNoStream, kStreamNonTemporal, kStreamCached };
template <int kStream>
inline void stream_ahead(const uint8_t* q) {
  if constexpr (kStream == kStreamNonTemporal) ahead_nta(q);  // dot_x86.hpp: 8 KiB ahead
  if constexpr (kStream == kStreamCached) _mm_prefetch(reinterpret_cast<const char*>(q) + kNtaBytes, _MM_HINT_T0);
}
template <class H, int RA, int kStream>
inline void fma_tile(const uint8_t* g, int64_t nk, const float* const* x, __m256 (*out)[2]) {
  constexpr size_t G = H::kGroupBytes;
  __m256 acc[RA][2];
#pragma GCC unroll 8
  for (int r = 0; r < RA; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  int64_t k = 0;
  if constexpr (RA == 1) {
    __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
    for (; k + 2 <= nk; k += 2) {
      const uint8_t* q = g + size_t(k) * G;
      if constexpr (kStream != kNoStream)
        for (size_t o = 0; o < 2 * G; o += 64) stream_ahead<kStream>(q + o);
      __m256 a0, b0, a1, b1;
      H::load(q, a0, b0);
      H::load(q + G, a1, b1);
      const __m256 x0 = _mm256_broadcast_ss(x[0] + k), x1 = _mm256_broadcast_ss(x[0] + k + 1);
      acc[0][0] = _mm256_fmadd_ps(a0, x0, acc[0][0]);
      acc[0][1] = _mm256_fmadd_ps(b0, x0, acc[0][1]);
      c0 = _mm256_fmadd_ps(a1, x1, c0);
      c1 = _mm256_fmadd_ps(b1, x1, c1);
    }
    acc[0][0] = _mm256_add_ps(acc[0][0], c0);
    acc[0][1] = _mm256_add_ps(acc[0][1], c1);
  }
  for (; k < nk; ++k) {
    const uint8_t* q = g + size_t(k) * G;
    if constexpr (kStream != kNoStream) {
      if ((size_t(k) * G) % 64 == 0) stream_ahead<kStream>(q);
    }
    __m256 a, b;
    H::load(q, a, b);
#pragma GCC unroll 8
    for (int r = 0; r < RA; ++r) {
      const __m256 xv = _mm256_broadcast_ss(x[r] + k);
      acc[r][0] = _mm256_fmadd_ps(a, xv, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(b, xv, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < RA; ++r) out[r][0] = acc[r][0], out[r][1] = acc[r][1];
}

// A tile's sums (H's lane order) into y rows r < RA (ldy apart) at its 16 outputs, of
// which `valid` exist: stored, or added to y (`add`: a later K block).
template <class H, int RA>
inline void fma_store(__m256 (*acc)[2], float* y, int64_t ldy, int valid, bool add) {
  for (int r = 0; r < RA; ++r) {
    __m256 lo, hi;
    H::order(acc[r][0], acc[r][1], lo, hi);
    float* yr = y + r * ldy;
    if (valid == 16) {
      if (add) lo = _mm256_add_ps(lo, _mm256_loadu_ps(yr)), hi = _mm256_add_ps(hi, _mm256_loadu_ps(yr + 8));
      _mm256_storeu_ps(yr, lo);
      _mm256_storeu_ps(yr + 8, hi);
    } else {
      alignas(32) float t[16];
      _mm256_store_ps(t, lo);
      _mm256_store_ps(t + 8, hi);
      for (int j = 0; j < valid; ++j) yr[j] = add ? yr[j] + t[j] : t[j];
    }
  }
}

}  // namespace
}  // namespace headwise::kernels::quant
