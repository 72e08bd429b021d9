// The small-M blocked GEMV body (see gemv.hpp), templated on the vector vocabulary S and
// the output block NB; instantiated once per ISA in gemv_f32_<isa>.cpp.
#pragma once

#include <algorithm>

#include "kernels/matmul/gemv.hpp"

namespace headwise::kernels {
namespace {

template <class S, int NB>
struct Gemv {
  using V = typename S::V;
  static constexpr int W = S::W;
  static constexpr int NV = NB / W;  // accumulator vectors per row
  static constexpr int kAheadFloats = 8192 / sizeof(float);
  static_assert(NB % W == 0, "an output block is whole vectors");
  // rows per pass: as many as keep R·NV accumulators + NV weight vectors in registers
  static constexpr int kRegs = W == 16 ? 28 : W == 8 ? 12 : 8;
  static constexpr int kGroup = std::max(1, std::min(kGemvMaxRows, kRegs / NV - 1));

  // R rows at once: R·NV accumulators, each weight slab row loaded once for all R.
  template <int R>
  static void block(const BlockedWeights& wt, const float* wblk, const float* bias, const float* x,
                    int64_t ldx, float* y, int64_t ldy, int n_valid) {
    V acc[R][NV];
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < NV; ++v) acc[r][v] = S::zero();
    // y(r, :) += x(r, k) · W(k, :) over the whole K of this output block: the block is
    // one contiguous run of Kp·NB floats, read front to back.
    for (int k = 0; k < wt.Kp; ++k) {
      const float* wk = wblk + size_t(k) * NB;
      // Ask for the weights kAheadBytes ahead: the hardware prefetcher alone ramps up too
      // slowly on the 1-10 MB matrices of a decode step (measured: ~25% more bandwidth).
      // Prefetches past the end of the weights are harmless (they never fault).
      for (int c = 0; c < NB; c += 16) __builtin_prefetch(wk + kAheadFloats + c, 0, 0);
      V wv[NV];
      for (int v = 0; v < NV; ++v) wv[v] = S::loada(wk + v * W);
      for (int r = 0; r < R; ++r) {
        const V xb = S::set1(x[r * ldx + k]);
        for (int v = 0; v < NV; ++v) acc[r][v] = S::fma(xb, wv[v], acc[r][v]);
      }
    }
    alignas(64) float out[NB];
    for (int r = 0; r < R; ++r) {
      for (int v = 0; v < NV; ++v) S::storea(out + v * W, acc[r][v]);
      float* yr = y + r * ldy;
      for (int n = 0; n < n_valid; ++n) yr[n] = out[n] + (bias ? bias[n] : 0.0f);
    }
  }

  static void run(const BlockedWeights& wt, const float* bias, const float* x, int64_t ldx,
                  float* y, int64_t ldy, int rows, int n0, int n1) {
    for (int nb = n0; nb < n1; nb += NB) {
      const float* wblk = wt.w + size_t(nb / NB) * wt.Kp * NB;
      const int nv = std::min(NB, wt.N - nb);
      const float* b = bias ? bias + nb : nullptr;
      // Rows in groups small enough to keep every accumulator in registers, and evenly
      // sized (8 rows as 4 + 4, not 6 + 2: a 2-row pass has too few accumulators to keep
      // the FMA pipes busy). At 8 rows the product is compute-bound on a core whose FMA
      // rate is 117 GFLOP/s: 16 flops per 4-byte weight outrun the memory stream.
      const int passes = (rows + kGroup - 1) / kGroup;
      const int group = (rows + passes - 1) / passes;
      for (int r = 0; r < rows;) {
        const int take = std::min(group, rows - r);
        const float* xr = x + r * ldx;
        float* yr = y + r * ldy + nb;
        switch (take) {
#define HW_GEMV_ROWS(n) \
  case n:               \
    if constexpr (n <= kGroup) {                                                 \
      block<n>(wt, wblk, b, xr, ldx, yr, ldy, nv);                               \
    }                                                                            \
    break;
          HW_GEMV_ROWS(1) HW_GEMV_ROWS(2) HW_GEMV_ROWS(3) HW_GEMV_ROWS(4)
          HW_GEMV_ROWS(5) HW_GEMV_ROWS(6) HW_GEMV_ROWS(7) HW_GEMV_ROWS(8)
#undef HW_GEMV_ROWS
          default: break;
        }
        r += take;
      }
    }
  }
};

}  // namespace
}  // namespace headwise::kernels
