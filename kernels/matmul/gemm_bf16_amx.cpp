// AMX bf16 panels of prefill products (gemm_bf16_amx.hpp): the pack (a 16×16 dword
// transpose per tile on AVX-512) and the 2×2-tile product loop.
#include "kernels/matmul/gemm_bf16_amx.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/simd/amx_tiles.hpp"

namespace headwise::kernels {
namespace {

// r[i] (16 dwords) := column i of the 16×16 dword matrix whose rows are r[0..15].
inline void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xdd);
  }
}

}  // namespace

namespace {

// 16 fp32 values as bf16 hi (round to nearest even) and lo = bf16(v − hi).
inline void split16(__m512 v, __m256i* hi, __m256i* lo) {
  const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
  const __m512 hv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  *hi = h;
  *lo = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, hv));
}

// K values (from `at(k)`: 16 floats at k) split into out[0, K) = hi, out[K, 2K) = a,
// out[2K, 3K) = b, where a/b are hi or lo as the caller's layout asks.
template <class At, bool InputOrder>
inline void split_row(At at, int64_t K, uint16_t* out) {
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m256i hi, lo;
    split16(at(k), &hi, &lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + K + k), InputOrder ? hi : lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * K + k), InputOrder ? lo : hi);
  }
  if (k < K) {  // the last K % 16 values
    const __mmask16 m = __mmask16((1u << (K - k)) - 1);
    __m256i hi, lo;
    split16(at(k), &hi, &lo);  // at() masks its own loads past K
    _mm256_mask_storeu_epi16(out + k, m, hi);
    _mm256_mask_storeu_epi16(out + K + k, m, InputOrder ? hi : lo);
    _mm256_mask_storeu_epi16(out + 2 * K + k, m, InputOrder ? lo : hi);
  }
}

}  // namespace

void amx_split_input_row(const float* x, int64_t K, uint16_t* out) {
  auto at = [x, K](int64_t k) {
    const __mmask16 m = K - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (K - k)) - 1);
    return _mm512_maskz_loadu_ps(m, x + k);
  };
  split_row<decltype(at), true>(at, K, out);
}

void amx_split_f16_weight_row(const uint16_t* w, int64_t K, uint16_t* out) {
  auto at = [w, K](int64_t k) {
    const __mmask16 m = K - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (K - k)) - 1);
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + k));
  };
  split_row<decltype(at), false>(at, K, out);
}

void amx_pack_panel_bf16(const uint16_t* w, int64_t ldw, int64_t K, uint16_t* panel) {
  for (int64_t s = 0; s < K / kAmxK; ++s)
    for (int c = 0; c < 2; ++c) {
      __m512i r[16];
      for (int n = 0; n < 16; ++n) r[n] = _mm512_loadu_si512(w + (16 * c + n) * ldw + kAmxK * s);
      transpose16(r);
      uint16_t* tile = panel + (s * 2 + c) * 512;
      for (int i = 0; i < 16; ++i) _mm512_storeu_si512(tile + 32 * i, r[i]);
    }
}

namespace {

// One 32-column panel's products over rows [m, m + 16·(two ? 2 : 1)), stored into y
// (the `cols` live columns). side(s) runs after step s's products are issued: vector
// work the core can do while the tile unit multiplies (the gated pair's swiglu).
template <bool two, class Side>
inline void panel_block(const uint16_t* x0, int64_t ldx, int64_t steps, const uint16_t* panel, int cols,
                        const float* bp, float* y, int64_t ldy, Side&& side) {
  if (bp) {
    _tile_loadd(0, bp, 0);
    _tile_loadd(1, bp + 16, 0);
    if (two) {
      _tile_loadd(2, bp, 0);
      _tile_loadd(3, bp + 16, 0);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if (two) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  const int64_t xstride = ldx * int64_t(sizeof(uint16_t));
  const uint16_t* x1 = x0 + 16 * ldx;
  // Tile registers are not renamed: a load waits for the products still reading that
  // tile. So each next operand is loaded right after its last reader of this step is
  // issued (x0's after the second product, the first B tile's after the third), and
  // overlaps the products left: +5% over loading all four at the top of the step in a
  // standalone loop (512 × 2048 × 2048, 2 threads); in quant_bench's
  // prefill_projection/*_amx, 2.77 → 2.70 ms mean over six types × two runs, within
  // this VM's noise.
  _tile_loadd(4, x0, xstride);
  _tile_loadd(6, panel, 64);
  _tile_loadd(7, panel + 512, 64);
  if (two) _tile_loadd(5, x1, xstride);
  for (int64_t s = 0; s < steps; ++s) {
    const bool more = s + 1 < steps;
    const uint16_t* t = panel + (s + 1) * 1024;
    const int64_t k = (s + 1) * kAmxK;
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (more) _tile_loadd(4, x0 + k, xstride);
    if (two) _tile_dpbf16ps(2, 5, 6);
    if (more) _tile_loadd(6, t, 64);
    if (two) _tile_dpbf16ps(3, 5, 7);
    if (more) {
      _tile_loadd(7, t + 512, 64);
      if (two) _tile_loadd(5, x1 + k, xstride);
    }
    side(s);
  }
  const int64_t ys = ldy * int64_t(sizeof(float));
  if (cols == kAmxPanelCols) {
    _tile_stored(0, y, ys);
    _tile_stored(1, y + 16, ys);
    if (two) {
      _tile_stored(2, y + 16 * ldy, ys);
      _tile_stored(3, y + 16 * ldy + 16, ys);
    }
    return;
  }
  // a partial panel: stored here, then its live columns copied out
  alignas(64) float part[2][16][kAmxPanelCols];
  _tile_stored(0, &part[0][0][0], 128);
  _tile_stored(1, &part[0][0][16], 128);
  if (two) {
    _tile_stored(2, &part[1][0][0], 128);
    _tile_stored(3, &part[1][0][16], 128);
  }
  amx_fence();
  for (int h = 0; h < (two ? 2 : 1); ++h)
    for (int i = 0; i < 16; ++i) std::memcpy(y + (16 * h + i) * ldy, part[h][i], size_t(cols) * sizeof(float));
}

// A panel's bias as the tile row its accumulators start from (zeros past `live`), or
// null without one. b is refilled for every block: the fences keep these stores after
// the last block's tile loads of it and before this block's (tile loads are asm without
// a memory operand, which the compiler could otherwise move stores across).
inline const float* bias_row(const float* bias, int n0, int live, float* b) {
  if (!bias) return nullptr;
  amx_fence();
  std::memset(b, 0, kAmxPanelCols * sizeof(float));
  std::memcpy(b, bias + n0, size_t(live) * sizeof(float));
  amx_fence();
  return b;
}

template <class Side>
inline void block(bool two, const uint16_t* x0, int64_t ldx, int64_t steps, const uint16_t* panel, int cols,
                  const float* bp, float* y, int64_t ldy, Side&& side) {
  if (two)
    panel_block<true>(x0, ldx, steps, panel, cols, bp, y, ldy, side);
  else
    panel_block<false>(x0, ldx, steps, panel, cols, bp, y, ldy, side);
}

// A gated pair's block (32 or 16 rows × a panel's columns) whose gate and up the tiles
// have stored, waiting for its swiglu: formed one 16-value vector at a time between the
// products of the next pair (step()), so the vector units work while the tile unit
// multiplies instead of after it; finish() forms what is left.
struct Pending {
  alignas(64) float g[32][kAmxPanelCols];
  alignas(64) float u[32][kAmxPanelCols];
  float* y = nullptr;
  int64_t ldy = 0;
  int live = 0, next = 0, count = 0;  // vectors formed, of count (2 a row)
  void step(AmxCombine combine) {
    if (next >= count) return;
    const int r = next / 2, c = next % 2 * 16, n = std::min(16, live - c);
    if (n > 0) combine({&g[r][c], kAmxPanelCols}, {&u[r][c], kAmxPanelCols}, {y + r * ldy + c, ldy}, 1, n);
    ++next;
  }
  void finish(AmxCombine combine) {
    while (next < count) step(combine);
  }
};

}  // namespace

void amx_gemm_panels_bf16(const uint16_t* x, int64_t ldx, int M, int64_t K, const uint16_t* panels, int cols,
                          const float* bias, float* y, int64_t ldy) {
  amx_configure();
  const int np = (cols + kAmxPanelCols - 1) / kAmxPanelCols;
  const size_t pe = amx_panel_elems(K);
  const int64_t steps = K / kAmxK;
  alignas(64) float b[kAmxPanelCols];
  for (int m = 0; m < M; m += 32) {
    const bool two = m + 32 <= M;  // else 16 rows left
    for (int p = 0; p < np; ++p) {
      const int n0 = p * kAmxPanelCols, live = std::min(kAmxPanelCols, cols - n0);
      block(two, x + int64_t(m) * ldx, ldx, steps, panels + p * pe, live, bias_row(bias, n0, live, b),
            y + int64_t(m) * ldy + n0, ldy, [](int64_t) {});
    }
  }
  _tile_release();
}

void amx_gemm_panels_gated_bf16(const uint16_t* x, int64_t ldx, int M, int64_t K, const uint16_t* gate_panels,
                                const uint16_t* up_panels, int cols, const float* gate_bias, const float* up_bias,
                                AmxCombine combine, float* y, int64_t ldy) {
  amx_configure();
  const int np = (cols + kAmxPanelCols - 1) / kAmxPanelCols;
  const size_t pe = amx_panel_elems(K);
  const int64_t steps = K / kAmxK;
  alignas(64) float b[kAmxPanelCols];
  // This pair's block and the one before it (formed meanwhile), in turn.
  Pending pend[2];
  int cur = 0;
  for (int m = 0; m < M; m += 32) {
    const bool two = m + 32 <= M;
    const uint16_t* x0 = x + int64_t(m) * ldx;
    for (int p = 0; p < np; ++p) {
      const int n0 = p * kAmxPanelCols, live = std::min(kAmxPanelCols, cols - n0);
      Pending &now = pend[cur], &before = pend[1 - cur];
      auto side = [&before, combine](int64_t) { before.step(combine); };
      // whole panels into the blocks (their dead columns are never read)
      block(two, x0, ldx, steps, gate_panels + p * pe, kAmxPanelCols, bias_row(gate_bias, n0, live, b), &now.g[0][0],
            kAmxPanelCols, side);
      block(two, x0, ldx, steps, up_panels + p * pe, kAmxPanelCols, bias_row(up_bias, n0, live, b), &now.u[0][0],
            kAmxPanelCols, side);
      before.finish(combine);
      amx_fence();  // the tile stores are asm without a memory operand: now's blocks are read after them
      now.y = y + int64_t(m) * ldy + n0;
      now.ldy = ldy;
      now.live = live;
      now.next = 0;
      now.count = two ? 64 : 32;
      cur = 1 - cur;
    }
  }
  pend[1 - cur].finish(combine);
  _tile_release();
}

}  // namespace headwise::kernels
