// The f32 linear kernel for few rows: a blocked GEMV over oneDNN's packed weights,
// templated on the vector vocabulary S and the output block NB; instantiated once per
// ISA in linear_f32_<isa>.cpp.
//
// For M ≤ kGemvMaxRows rows (one token, or one token of each of a few sequences) a
// matmul is a pass over the weights: bound by reading them, not by arithmetic. oneDNN
// 2.6's matmul reads them at about half the machine's bandwidth there, so this kernel
// streams the SAME packed weights (no second copy) with every load feeding FMAs. The
// layout is the f32 one of PackedWeights (linear.hpp).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/matmul/linear.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels {

constexpr int kGemvMaxRows = 8;

namespace {

// The weights ahead: non-temporal (prefetchnta: into L1, bypassing the other caches'
// normal replacement), except on Intel, which does not keep such a line in its L3 — a
// matrix the L3 could hold came from DRAM on every call (the Q4_1/Q5_1 offsets' small
// f32 products in decode, graph/projection_offsets.cpp: 17 MB a token of llama-134m;
// quant.hpp's cpu_decode_nontemporal measured the same for 16-bit rows). There: into
// every level (prefetcht0).
inline void prefetch_row(const float* p, bool nt) {
  if (nt)
    __builtin_prefetch(p, 0, 0);
  else
    __builtin_prefetch(p, 0, 3);
}

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
  static void block(const PackedWeights& wt, const float* wblk, const float* bias, const float* x,
                    int64_t ldx, float* y, int64_t ldy, int n_valid, bool nt) {
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
      for (int c = 0; c < NB; c += 16) prefetch_row(wk + kAheadFloats + c, nt);
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

  // Output columns [n0, n1), n0 a multiple of NB.
  static void run(const PackedWeights& wt, const float* bias, const float* x, int64_t ldx,
                  float* y, int64_t ldy, int rows, int n0, int n1, bool nt) {
    const float* w = static_cast<const float*>(wt.data);
    for (int nb = n0; nb < n1; nb += NB) {
      const float* wblk = w + size_t(nb / NB) * wt.Kp * NB;
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
      block<n>(wt, wblk, b, xr, ldx, yr, ldy, nv, nt);                           \
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

// The plain layout (PackedWeights: NB = 0, W(k, n) at data[k·ld + n]) — what oneDNN 2.6
// keeps for its gemm-based matmul on a CPU without brgemm (AVX2 only), where a blocked
// layout would send every prefill to its reference matmul. Rows of W are read front to
// back, kKStep of them at a time (sequential streams the prefetchers follow, where
// walking a column tile down K would reopen every DRAM page once per tile), and each
// input row's sums live in y itself across them (the share's columns, in L1/L2).
template <class S>
struct GemvPlain {
  using V = typename S::V;
  static constexpr int W = S::W;
  static constexpr int kKStep = 4;

  // y(r, n) for r < rows, n in [n0, n1) (any n0): (bias +) Σ_k x(r, k)·W(k, n).
  static void run(const PackedWeights& wt, const float* bias, const float* x, int64_t ldx, float* y,
                  int64_t ldy, int rows, int n0, int n1, bool nt) {
    const float* w = static_cast<const float*>(wt.data);
    const int64_t ld = wt.ld;
    const int nv = (n1 - n0) / W * W;  // columns n0 .. n0 + nv in whole vectors
    for (int r = 0; r < rows; ++r)
      for (int n = n0; n < n1; ++n) y[r * ldy + n] = bias ? bias[n] : 0.0f;
    int k = 0;
    for (; k + kKStep <= wt.K; k += kKStep) {
      const float* wk = w + size_t(k) * ld;
      for (int r = 0; r < rows; ++r) {
        const float* xr = x + r * ldx + k;
        const V x0 = S::set1(xr[0]), x1 = S::set1(xr[1]), x2 = S::set1(xr[2]), x3 = S::set1(xr[3]);
        float* yr = y + r * ldy;
        int n = n0;
        for (; n < n0 + nv; n += W) {
          if (r == 0 && (n - n0) % 16 == 0)  // the rows kKStep further on, a line each
            for (int j = 0; j < kKStep; ++j) prefetch_row(wk + (kKStep + j) * ld + n, nt);
          V a = S::load(yr + n);
          a = S::fma(x0, S::load(wk + n), a);
          a = S::fma(x1, S::load(wk + ld + n), a);
          a = S::fma(x2, S::load(wk + 2 * ld + n), a);
          a = S::fma(x3, S::load(wk + 3 * ld + n), a);
          S::store(yr + n, a);
        }
        for (; n < n1; ++n)
          yr[n] = (((yr[n] + xr[0] * wk[n]) + xr[1] * wk[ld + n]) + xr[2] * wk[2 * ld + n]) + xr[3] * wk[3 * ld + n];
      }
    }
    for (; k < wt.K; ++k) {
      const float* wk = w + size_t(k) * ld;
      for (int r = 0; r < rows; ++r) {
        const float xk = x[r * ldx + k];
        float* yr = y + r * ldy;
        int n = n0;
        for (; n < n0 + nv; n += W) S::store(yr + n, S::fma(S::set1(xk), S::load(wk + n), S::load(yr + n)));
        for (; n < n1; ++n) yr[n] += xk * wk[n];
      }
    }
  }
};

// The registry entry for one ISA: the output block widths NBs it was instantiated for,
// and the plain layout (GemvPlain).
template <class S, int... NBs>
struct GemvF32 {
  using BlockFn = void (*)(const PackedWeights&, const float*, const float*, int64_t, float*,
                           int64_t, int, int, int, bool);
  static BlockFn pick(int NB) {
    BlockFn f = nullptr;
    ((NB == NBs ? (f = &Gemv<S, NBs>::run, 0) : 0), ...);
    return f;
  }
  // Weight rows are read with aligned vector loads: the packing must be 64-byte aligned
  // (oneDNN's memory is).
  static bool plain(const PackedWeights& w) { return w.NB == 0 && w.ld >= w.N; }
  static bool supports(const PackedWeights& w) {
    if (w.type != WeightType::f32 || !w.data) return false;
    if (plain(w)) return true;
    return reinterpret_cast<uintptr_t>(w.data) % 64 == 0 && w.Kp >= w.K && pick(w.NB) != nullptr;
  }
  // The GEMV reads Kp inputs per row: when K is padded, rows are staged zero padded.
  static size_t scratch_bytes(const PackedWeights& w, int rows) {
    return !plain(w) && w.Kp != w.K ? size_t(rows) * w.Kp * sizeof(float) : 0;
  }
  static void run(const PackedWeights& w, const float* bias, const float* x, int64_t ldx,
                  float* y, int64_t ldy, int rows, int threads, void* scratch) {
    const bool nta = !quant::cpu_is_intel();  // prefetch_row says why
    if (plain(w)) {
      // Shares of whole 16-column groups (a line of a row), contiguous per thread.
      const int groups = (w.N + 15) / 16;
      const int nt = std::max(1, std::min(threads, groups));
      if (nt == 1) return GemvPlain<S>::run(w, bias, x, ldx, y, ldy, rows, 0, w.N, nta);
#pragma omp parallel num_threads(nt)
      {
        const int t = omp_get_thread_num(), n = omp_get_num_threads();
        const int c0 = std::min(w.N, 16 * int(int64_t(groups) * t / n));
        const int c1 = std::min(w.N, 16 * int(int64_t(groups) * (t + 1) / n));
        if (c0 < c1) GemvPlain<S>::run(w, bias, x, ldx, y, ldy, rows, c0, c1, nta);
      }
      return;
    }
    const BlockFn fn = pick(w.NB);
    if (w.Kp != w.K) {
      prepare(w, x, ldx, rows, scratch);
      x = static_cast<const float*>(scratch);
      ldx = w.Kp;
    }
    const int blocks = (w.N + w.NB - 1) / w.NB;
    const int nt = std::max(1, std::min(threads, blocks));
    // Contiguous runs of output blocks per thread: each streams its own part of W.
    if (nt == 1) return fn(w, bias, x, ldx, y, ldy, rows, 0, w.N, nta);  // no parallel region for one thread
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      const int b0 = int(int64_t(blocks) * t / n), b1 = int(int64_t(blocks) * (t + 1) / n);
      if (b0 < b1) fn(w, bias, x, ldx, y, ldy, rows, b0 * w.NB, std::min(w.N, b1 * w.NB), nta);
    }
  }
  // run() in two parts (LinearKernelImpl::prepare, run_prepared): the staging, then the
  // products on the calling thread.
  static void prepare(const PackedWeights& w, const float* x, int64_t ldx, int rows, void* scratch) {
    if (plain(w) || w.Kp == w.K) return;
    float* xp = static_cast<float*>(scratch);
    for (int r = 0; r < rows; ++r) {
      std::memcpy(xp + size_t(r) * w.Kp, x + r * ldx, w.K * sizeof(float));
      std::fill(xp + size_t(r) * w.Kp + w.K, xp + size_t(r + 1) * w.Kp, 0.0f);
    }
  }
  static void run_prepared(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y,
                           int64_t ldy, int rows, int, void* scratch) {
    const bool nta = !quant::cpu_is_intel();
    if (plain(w)) return GemvPlain<S>::run(w, bias, x, ldx, y, ldy, rows, 0, w.N, nta);
    if (w.Kp != w.K) {
      x = static_cast<const float*>(scratch);
      ldx = w.Kp;
    }
    pick(w.NB)(w, bias, x, ldx, y, ldy, rows, 0, w.N, nta);
  }
  static constexpr LinearKernelImpl impl() {
    return {"gemv_blocked", kGemvMaxRows, supports, scratch_bytes, run, nullptr, nullptr, 0, nullptr, nullptr,
            prepare, run_prepared};
  }
};

}  // namespace
}  // namespace headwise::kernels
