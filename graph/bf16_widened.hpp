// BF16 weights in prefill as an fp32 GEMM: the stored bf16 rows widened to fp32, a
// chunk of output columns at a time, into oneDNN's blocked f32 layout, then its f32
// matmul on the chunk. For CPUs where oneDNN's bf16 matmul (vdpbf16ps) runs BELOW the
// fp32 FMA rate: Intel Xeons without AMX exposed (Projection::prepare_bf16_onednn and
// quant::cpu_bf16_dot_slow say when). Measured on one (family 6, model 207, AMX hidden
// by the VM; 2026-12-03, 1 thread): the peak probe's bf16 dot 82 GFLOP/s against 166 for
// fp32 FMA; oneDNN 2.6 bf16 matmul (brg:avx512_core_bf16) 75-83 GFLOP/s, f32 matmul
// (brg:avx512_core) 135-170 on the same 512×768×{768,2048} shapes; 2 threads, 128-column
// chunks widened by oneDNN's reorder then multiplied, 186-222 against bf16's 145-153.
//
// Nothing is kept but the stored rows (the bf16 path keeps a blocked bf16 copy, K·N·2
// bytes more): the widened chunk lives in scratch, K·chunk·4 bytes (≤ 1 MiB: it stays in
// L2 while every input row passes it). Inputs stay fp32 (not rounded to bf16 as the bf16
// matmul needs), so each output differs from the float64 product of the stored weights
// only by fp32 rounding of the sums.
//
// Made once per projection (the primitives for every row class and the chunk widths);
// run() executes them, with no allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headwise/status.hpp"

namespace headwise::graph {

class WidenedBf16 {
 public:
  static constexpr int kMinRows = 16;    // row classes 16, 32, .., kMaxRows; below: the small kernel
  static constexpr int kMaxRows = 1024;

  // w: [N][K] bf16 rows (read at every call: must outlive this), bias: N floats or null
  // (copied). *out stays null when oneDNN has no fast f32 matmul here (a reference
  // implementation): the caller keeps its other paths.
  static Status create(const uint16_t* w, int K, int N, const float* bias, std::unique_ptr<WidenedBf16>* out);
  ~WidenedBf16();

  // The rows of M that run() computes: M rounded down to a multiple of kMinRows (as
  // classes of 16..1024 rows); the rest (fewer than 16) is the caller's.
  static int rows_taken(int M) { return M / kMinRows * kMinRows; }
  // Scratch for run() with up to `rows` rows (monotone in rows).
  size_t scratch_bytes(int rows) const;
  // y(M×N) = x·W (+ b) for M = rows_taken(M) rows; x rows ldx floats apart (ldx ≠ K is
  // staged through kMinRows rows at a time), y rows ldy apart.
  Status run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads, void* scratch) const;
  // What M rows run on, e.g. "oneDNN:brg:avx512_core on bf16 widened per 128 columns×512".
  std::string implementation(int M) const;

 private:
  struct Impl;
  explicit WidenedBf16(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace headwise::graph
