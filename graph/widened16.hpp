// BF16 and F16 weights in prefill as an fp32 GEMM: the stored 16-bit rows widened to
// fp32 (exactly), a chunk of output columns at a time, then oneDNN's f32 matmul on the
// chunk. Used for
//   - F16 on an AVX-512 plan: oneDNN 2.6 has no f16 matmul, and the registry kernel
//     (one weight row at a time) ran F16 prefill at ~24 GFLOP/s a core on an Intel host
//     where BF16 ran at 212 (bench/README.md, "Session 15");
//   - BF16 where oneDNN's bf16 matmul (vdpbf16ps) runs BELOW the fp32 FMA rate: Intel
//     without AMX exposed (Projection::prepare_bf16_onednn, quant::cpu_bf16_dot_slow).
//     Measured on one (family 6, model 207, AMX hidden by the VM; 2026-12-03, 1 thread):
//     the peak probe's bf16 dot 82 GFLOP/s against 166 for fp32 FMA; oneDNN 2.6 bf16
//     matmul (brg:avx512_core_bf16) 75-83 GFLOP/s, f32 (brg:avx512_core) 135-170 on the
//     same 512×768×{768,2048} shapes; 2 threads, 128-column chunks, 193-242 against 145-153.
//
// The chunk is widened into plain [cols][K] rows (the KV cache's converters,
// kernels/convert) and handed to oneDNN as a `ba` K×cols matrix: its brgemm packs that
// itself, and widening into its blocked layout with oneDNN's reorder was no faster for
// bf16 (4.6 GB/s) and has no fast f16 path (simple:any, 100× slower). Nothing is kept
// but the stored rows (the bf16 matmul keeps a blocked bf16 copy, K·N·2 bytes more); the
// chunk lives in scratch, K·cols·4 bytes ≤ 1 MiB, in L2 while every input row passes it.
// Inputs stay fp32 (the bf16 matmul rounds them to bf16), so each output differs from
// the float64 product of the stored weights only by the fp32 rounding of the sums.
//
// Quantized weights on a CPU with AMX (create_dequant; Projection::create_typed): the
// int8 tiles of the registry kernels reach 180-300 GFLOP/s a core in prefill where
// oneDNN's AMX bf16 matmul reaches 900-1300 (an Intel VM with AMX, 2026-12-04, one
// thread, 256-512 × 768-2048 × 128-768). So prefill dequantizes a chunk of output rows
// of the kernel's repacked panels into bf16 [cols][K] rows (LinearKernelImpl::
// dequant_bf16: the exact fp32 values d·q, rounded) and multiplies them by the inputs
// rounded to bf16 (per pass of ≤ 8 MiB of rows) with that matmul. Its error: both operands rounded to
// bf16 (2⁻⁹ relative each, as BF16 weights' inputs are), fp32 sums; from min_rows rows,
// below which the dequantization costs more than the int8 tiles' slower products.
//
// Where kernels::amx_usable() (and K is whole 32-value tile steps), those bf16 weights —
// dequantized, or BF16 as stored — go instead to the AMX panels of
// kernels/matmul/gemm_bf16_amx.hpp, with the same numbers: per chunk of ≤ 2 MiB of
// panels (32 columns each, packed as tiles), each thread dequantizes and packs its range
// into its own L2, then multiplies it by every input row of the pass. oneDNN's matmul
// dequantized whole matrices (32 MiB of bf16 for a 2048 × 8192) and read them back: 1.1
// TFLOP/s against 1.4-1.7 here (llama-1b-like Q4_K_M, 512 rows, 2 threads; bench/
// README.md, "Session 25"). F16 goes there too, split: weights exactly and inputs
// within 2⁻¹⁷ as bf16 hi + lo, three products per value along a K of 3K (gemm_bf16_amx.hpp,
// amx_split_*; errors below 2⁻¹⁶ of each term, against fp32's widened rows) — 1.8× the
// widened fp32 matmul's rate (quant_bench prefill_projection/f16). HEADWISE_AMX=0 keeps
// oneDNN.
//
// Made once per projection (primitives for every row class and both chunk widths);
// run() executes them, with no allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headwise/status.hpp"
#include "kernels/matmul/gemm_bf16_amx.hpp"
#include "kernels/matmul/linear.hpp"

namespace headwise::graph {

class Widened16 {
 public:
  static constexpr int kMinRows = 16;  // row classes 16, 32, .., kMaxRows; below: the small kernel
  static constexpr int kMaxRows = 1024;

  // w: [N][K] rows of `type` (bf16 or f16; read at every call: must outlive this), bias:
  // N floats or null (copied), isa: the widening's. *out stays null when oneDNN has no
  // fast f32 matmul here (a reference implementation): the caller keeps its other paths.
  static Status create(kernels::WeightType type, const uint16_t* w, int K, int N, const float* bias,
                       kernels::Isa isa, std::unique_ptr<Widened16>* out);
  // Weights w repacked by the registry kernel k (k.dequant_bf16; w.repacked, read at
  // every call), dequantized per call into bf16 chunks for oneDNN's bf16 matmul, for M ≥
  // min_rows (rounded down to a multiple of kMinRows). *out stays null when oneDNN has
  // no fast bf16 matmul here.
  static Status create_dequant(const kernels::LinearKernelImpl& k, const kernels::PackedWeights& w,
                               const float* bias, int min_rows, kernels::Isa isa,
                               std::unique_ptr<Widened16>* out);
  // BF16 rows w ([N][K], read at every call: must outlive this) as oneDNN's bf16 matmul's
  // weights in place (its `ba` K×N), inputs rounded to bf16 per pass, all N columns in
  // one matmul writing a dense y: where that matmul runs on AMX, instead of a blocked
  // copy of the weights (K·N·2 bytes kept) in 256-row classes.
  static Status create_bf16_rows(const uint16_t* w, int K, int N, const float* bias, kernels::Isa isa,
                                 std::unique_ptr<Widened16>* out);
  ~Widened16();

  // Fewer rows than this are the caller's (kMinRows, or create_dequant's min_rows).
  int min_rows() const;

  // The rows of M that run() computes: M rounded down to a multiple of kMinRows (as
  // classes of 16..1024 rows); the rest (fewer than 16) is the caller's.
  static int rows_taken(int M) { return M / kMinRows * kMinRows; }
  // Scratch for run() with up to `rows` rows (monotone in rows).
  size_t scratch_bytes(int rows) const;
  // y(M×N) = x·W (+ b) for M = rows_taken(M) rows; x rows ldx floats apart (ldx ≠ K is
  // staged through kMinRows rows at a time), y rows ldy apart.
  Status run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads, void* scratch) const;
  // A SwiGLU FFN's gate (this) and up projections, both on the AMX panels with one shape
  // (can_gate): y = combine(x·Wg, x·Wu) for rows_taken(M) rows in one pass over the
  // inputs, the two products never stored (kernels::amx_gemm_panels_gated_bf16; each
  // chunk holds half as many panels of each). Scratch: scratch_bytes(M), as for run().
  bool can_gate(const Widened16& up) const;
  Status run_gated(const Widened16& up, kernels::AmxCombine combine, const float* x, int64_t ldx, float* y,
                   int64_t ldy, int M, int threads, void* scratch) const;
  // What M rows run on, e.g. "oneDNN:brg:avx512_core on bf16 widened per 128 columns×512".
  std::string implementation(int M) const;

 private:
  struct Impl;
  explicit Widened16(std::unique_ptr<Impl> impl);
  static Status finish(std::unique_ptr<Impl> d, std::unique_ptr<Widened16>* out);
  std::unique_ptr<Impl> impl_;
};

}  // namespace headwise::graph
