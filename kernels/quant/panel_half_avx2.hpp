// BF16 and F16 weights in 16-row panels: the avx2 linear-registry entries of these types
// (bf16_avx2.cpp, f16_avx2.cpp) read this copy, written once at load, instead of the
// stored rows.
//
// Why: on rows as stored, a product is one dot per (weight row, input row), each ending
// in a horizontal sum, and every input row re-reads the weight row: prefill ran at
// 7-11 GFLOP/s of a 37-40 GFLOP/s core (Zen 1 host, quant_bench projection/bf16/avx2,
// 128 rows of 2048²). Without AVX512-BF16 there is no bf16 dot instruction and oneDNN
// 2.6 has no bf16 matmul either, so the product is fp32 FMA on weights widened in
// registers, and the kernel is a register-blocked GEMM: a tile of RA ≤ 6 input rows ×
// 16 output rows keeps 12 ymm sums, each k's 16 weights are one 32-byte load widened to
// two ymm vectors that feed 2·RA FMAs against RA broadcast inputs.
//
// Layout: panel p holds output rows 16p .. 16p + 15 (the last one padded with zero rows)
// as K groups of 16 halves, group k = the 16 rows' element k (32 bytes): panels are
// K·32 bytes, one after the other, decode streams each front to back.
// Widening: BF16 takes the 32-bit lanes as row pairs (2i, 2i + 1): a shift left by 16
// gives the even rows as fp32, masking the low half the odd ones (two integer ops, no
// shuffle; the sums are put back in row order once per tile); F16 converts each half of
// the group with vcvtph2ps (rows 0-7, 8-15).
//
// Inputs: BF16 multiplies the inputs rounded to bf16 (as the avx512 entry's vdpbf16ps
// does, so every ISA computes the same products), rounded once per call into scratch
// as fp32; F16 multiplies the fp32 inputs as they are (read in place).
// Prefill loops: chunks of kChunkRows input rows × K blocks of kKc (one panel's block,
// 8 KiB, stays in L1 for the chunk's tiles; the chunk's inputs, 96 KiB, in L2), each
// tile's sums added to y per K block; decode (≤ kGemvRows rows) takes the whole K in one
// pass with a prefetch 8 KiB ahead: non-temporal on AMD (Zen 1/3, where it was chosen),
// into L1 elsewhere (quant::cpu_decode_nontemporal: on an Intel Xeon the non-temporal
// lines skipped its L3, llama-134m BF16 decode 54-56 against 107-109 tok/s).
// Include only from a *_avx2.cpp file.
#pragma once

#include <algorithm>
#include <cstring>

#include "kernels/matmul/linear.hpp"
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/fma_tile_avx2.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {
namespace {

constexpr int kHalfPanelRows = 16;
inline size_t half_panel_bytes(int64_t K) { return size_t(K) * kHalfPanelRows * 2; }

// The 16 rows of group k as two fp32 vectors, in the lane order of the type.
struct WidenBf16 {
  static constexpr WeightType kType = WeightType::bf16;
  static constexpr size_t kGroupBytes = 32;
  static constexpr ActKind kAct = ActKind::bf16;  // inputs rounded to bf16
  static void load(const uint8_t* g, __m256& a, __m256& b) {
    const __m256i v = load32(g);
    a = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));                                      // rows 0, 2, .., 14
    b = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(int32_t(0xFFFF0000u))));  // rows 1, 3, .., 15
  }
  // The sums of load()'s lanes as rows 0-7 and 8-15.
  static void order(__m256 a, __m256 b, __m256& lo, __m256& hi) {
    const __m256 l = _mm256_unpacklo_ps(a, b), h = _mm256_unpackhi_ps(a, b);  // rows 0-3 | 8-11, 4-7 | 12-15
    lo = _mm256_permute2f128_ps(l, h, 0x20);
    hi = _mm256_permute2f128_ps(l, h, 0x31);
  }
  static float value(uint16_t h) { return bf16_to_f32(h); }
};
struct WidenF16 {
  static constexpr WeightType kType = WeightType::f16;
  static constexpr size_t kGroupBytes = 32;
  static constexpr ActKind kAct = ActKind::f32;  // inputs as they are
  static void load(const uint8_t* g, __m256& a, __m256& b) {
    a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
    b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16)));
  }
  static void order(__m256 a, __m256 b, __m256& lo, __m256& hi) { lo = a, hi = b; }
  static float value(uint16_t h) { return h2f(h); }
};

template <class H>
struct HalfPanelLinear {
  static constexpr int kTileRows = 6;     // 12 sums + 2 weight vectors + 1 input of 16 ymm
  static constexpr int kGemvRows = 4;     // up to here one pass over all of K (decode steps)
  static constexpr int kChunkRows = 96;   // 16 tiles of 6
  static constexpr int64_t kKc = 256;     // K block: one panel's is 8 KiB
  static int64_t panels(const PackedWeights& w) { return (int64_t(w.N) + kHalfPanelRows - 1) / kHalfPanelRows; }
  static bool supports(const PackedWeights& w) {
    return w.type == H::kType && w.data && w.NB == 1 && w.K > 0 && w.N > 0 && w.row_bytes == int64_t(w.K) * 2;
  }
  static size_t repacked_bytes(const PackedWeights& w) { return size_t(panels(w)) * half_panel_bytes(w.K); }
  // Rows [n0, n1) (n0 a multiple of 16; n1 one too, or N) into their panels.
  static void repack(const PackedWeights& w, int64_t n0, int64_t n1, void* dst) {
    const auto* src = static_cast<const uint8_t*>(w.data);
    for (int64_t p = n0 / kHalfPanelRows; p * kHalfPanelRows < n1; ++p) {
      auto* out = reinterpret_cast<uint16_t*>(static_cast<uint8_t*>(dst) + size_t(p) * half_panel_bytes(w.K));
      for (int r = 0; r < kHalfPanelRows; ++r) {
        const int64_t n = p * kHalfPanelRows + r;
        const auto* row = n < n1 ? reinterpret_cast<const uint16_t*>(src + size_t(n) * size_t(w.row_bytes)) : nullptr;
        for (int64_t k = 0; k < w.K; ++k) out[size_t(k) * kHalfPanelRows + r] = row ? row[k] : 0;
      }
    }
  }
  // BF16: the rounded input rows, K floats each (64-byte multiples); F16: none.
  static size_t row_floats(int K) { return (size_t(K) + 15) / 16 * 16; }
  static size_t scratch_bytes(const PackedWeights& w, int rows) {
    return H::kAct == ActKind::bf16 ? size_t(rows) * row_floats(w.K) * 4 : 0;
  }

  // y rows [m, m + ra) of panel p, from its groups [k0, k0 + nk); `add`: onto y (a later
  // K block), else stored; `stream`: a decode pass (prefetch ahead). bias: the caller's.
  template <int RA>
  static void rows(const PackedWeights& w, int64_t p, const float* x, int64_t ldx, int m, int64_t k0, int64_t nk,
                   bool add, bool stream, float* y, int64_t ldy) {
    const uint8_t* g = static_cast<const uint8_t*>(w.data) + size_t(p) * half_panel_bytes(w.K) + size_t(k0) * 32;
    const float* xr[RA];
    for (int r = 0; r < RA; ++r) xr[r] = x + (m + r) * ldx + k0;
    __m256 acc[RA][2];
    if (!stream) fma_tile<H, RA, kNoStream>(g, nk, xr, acc);
    else if (cpu_decode_nontemporal(Isa::avx2)) fma_tile<H, RA, kStreamNonTemporal>(g, nk, xr, acc);
    else fma_tile<H, RA, kStreamCached>(g, nk, xr, acc);
    const int64_t n = p * kHalfPanelRows;
    fma_store<H, RA>(acc, y + m * ldy + n, ldy, int(std::min<int64_t>(kHalfPanelRows, w.N - n)), add);
  }
  template <int RA>
  static void rows_of(const PackedWeights& w, int64_t p, const float* x, int64_t ldx, int m, int ra, int64_t k0,
                      int64_t nk, bool add, bool stream, float* y, int64_t ldy) {
    if (ra == RA) return rows<RA>(w, p, x, ldx, m, k0, nk, add, stream, y, ldy);
    if constexpr (RA > 1) rows_of<RA - 1>(w, p, x, ldx, m, ra, k0, nk, add, stream, y, ldy);
  }

  // run(), prepare(), run_prepared(): StepsEntry (gemv_rows.hpp) over steps().
  static void steps(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y, int64_t ldy,
                    int rows, int threads, void* scratch, Steps part) {
    const int64_t np = panels(w), K = w.K;
    const bool rounded = H::kAct == ActKind::bf16;
    float* xs = static_cast<float*>(scratch);
    const int64_t lda = rounded ? int64_t(row_floats(w.K)) : ldx;
    const float* xa = rounded ? xs : x;
    const int nt = int(std::max<int64_t>(1, std::min<int64_t>(threads, std::max<int64_t>(np, rows))));
    auto prepare = [&](int r) {
      if (rounded) round_bf16_f32(x + r * ldx, xs + r * lda, K);
    };
    auto share = [&](int t, int n) {
      const int64_t p0 = np * t / n, p1 = np * (t + 1) / n;
      if (p0 >= p1) return;
      if (rows <= kGemvRows) {
        for (int64_t p = p0; p < p1; ++p) rows_of<kGemvRows>(w, p, xa, lda, 0, rows, 0, K, false, true, y, ldy);
      } else {
        for (int m0 = 0; m0 < rows; m0 += kChunkRows) {
          const int m1 = std::min(rows, m0 + kChunkRows);
          for (int64_t k0 = 0; k0 < K; k0 += kKc) {
            const int64_t nk = std::min(kKc, K - k0);
            for (int64_t p = p0; p < p1; ++p)
              for (int m = m0; m < m1; m += kTileRows)
                rows_of<kTileRows>(w, p, xa, lda, m, std::min(kTileRows, m1 - m), k0, nk, k0 > 0, false, y,
                                   ldy);
          }
        }
      }
      if (bias) {
        const int64_t n0 = p0 * kHalfPanelRows, n1 = std::min<int64_t>(w.N, p1 * kHalfPanelRows);
        for (int r = 0; r < rows; ++r)
          for (int64_t j = n0; j < n1; ++j) y[r * ldy + j] += bias[j];
      }
    };
    prepare_then_share(rows, nt, prepare, share, part);
  }
  static constexpr LinearKernelImpl impl(const char* name) {
    using E = StepsEntry<HalfPanelLinear>;
    return {name, 0, supports, scratch_bytes, E::run, repacked_bytes, repack, kHalfPanelRows, nullptr, nullptr,
            E::prepare, E::run_prepared};
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
