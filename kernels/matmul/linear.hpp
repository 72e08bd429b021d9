// Linear kernels: y(M×N) = x(M×K)·W(K×N) (+ b), fp32 activations, W in one of the
// weight types of weight_types.inc, one kernel per (weight type, ISA) listed in
// linear.inc. Pure compute: pointers, shapes and strides in; no allocation, no locks,
// no exceptions, no change to OpenMP settings. Packing weights, creating oneDNN
// primitives and choosing a kernel happen once, in the plan (graph/projection.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/registry.hpp"

namespace headwise::kernels {

enum class WeightType {
#define HW_WEIGHT_TYPE(name, block_elems, block_bytes) name,
#include "kernels/matmul/weight_types.inc"
#undef HW_WEIGHT_TYPE
  Count
};

const char* weight_type_name(WeightType t);
int weight_block_elems(WeightType t);
int weight_block_bytes(WeightType t);

// Packed weights as a kernel sees them. Logical W is K×N (K inputs, N outputs).
//  f32: oneDNN's blocked layout [N/NB][Kp/KB][KB][NB] — for each block of NB outputs,
//       all of K in slabs of KB rows of NB consecutive floats ("BA16a64b" when KB = 16,
//       NB = 64); K padded to Kp and N to whole blocks, with zeros. Or, where oneDNN keeps
//       its weights plain (its gemm-based matmul on a CPU without AVX-512, whose only
//       matmul on a blocked layout is the reference one), NB = KB = 0 and W(k, n) at
//       data[k·ld + n] (ld ≥ N: a slice of columns keeps the whole matrix's ld).
//  other types: as stored in the file, [N][K] rows (PyTorch's Linear / GGUF order),
//       each row K / block_elems blocks; NB = 1, KB = block_elems, Kp = K,
//       row_bytes = bytes per output row.
struct PackedWeights {
  WeightType type = WeightType::f32;
  const void* data = nullptr;
  int K = 0, N = 0;
  int KB = 0, NB = 0, Kp = 0;
  int64_t row_bytes = 0;
  int64_t ld = 0;  // f32 plain layout only: floats from one k to the next
  // data is the kernel's own layout, written by its LinearKernelImpl::repack (the plan
  // repacks once at load; the other fields still describe the stored weights).
  bool repacked = false;
};

// y(r, n) = Σ_k x(r, k)·W(k, n) + bias(n), for r < rows and n < N.
// x rows are ldx floats apart (K floats read), y rows ldy apart; bias: N floats or null.
// threads: OpenMP threads for this call, ≥ 1 (the caller resolves "0 = default" and
// passes 1 inside a parallel region). scratch: scratch_bytes(w, rows) bytes, 64-byte
// aligned, used only during the call.
using LinearRunFn = void (*)(const PackedWeights& w, const float* bias, const float* x,
                             int64_t ldx, float* y, int64_t ldy, int rows, int threads,
                             void* scratch);

// What a kernel file defines (see linear.inc).
struct LinearKernelImpl {
  const char* name;  // e.g. "gemv_blocked": the plan prints "<name>:<isa>"
  // Rows per call the kernel is meant for (the plan hands more rows to oneDNN for f32,
  // or calls the kernel in passes); 0: any number.
  int max_rows;
  bool (*supports)(const PackedWeights& w);  // can it read this packing?
  size_t (*scratch_bytes)(const PackedWeights& w, int rows);
  LinearRunFn run;
  // Optional: a kernel that reads its own layout of the weights (e.g. rows interleaved
  // so one vector holds several rows' blocks) names it here; null: it reads them as
  // stored. The plan allocates repacked_bytes(w) bytes (64-byte aligned) once at load,
  // calls repack for groups of repack_rows output rows (n0 a multiple of repack_rows,
  // n1 one too or N; disjoint ranges may run in parallel) and then runs the kernel on w
  // with data = the copy and repacked = true. run() is only ever given repacked weights.
  size_t (*repacked_bytes)(const PackedWeights& w) = nullptr;
  void (*repack)(const PackedWeights& w, int64_t n0, int64_t n1, void* dst) = nullptr;
  int repack_rows = 0;
  // Optional, for a kernel with its own layout: output rows [n0, n1) of the repacked w
  // (n0 a multiple of repack_rows, n1 one too or N) dequantized into bf16, row n at
  // out[(n − n0)·ldo]: each value the type's dequantize() of the stored row rounded to
  // nearest even (quant::f32_to_bf16), what a prefill on oneDNN's bf16 matmul
  // multiplies (graph/widened16.hpp).
  void (*dequant_bf16)(const PackedWeights& w, int64_t n0, int64_t n1, uint16_t* out, int64_t ldo) = nullptr;
  // Optional, with dequant_bf16: the same values for rows [n0, n1) (n0 a multiple of 32,
  // n1 − n0 ≤ 32) written straight into one AMX panel, the layout amx_pack_panel_bf16
  // makes of those rows (kernels/matmul/gemm_bf16_amx.hpp; columns past n1 zero) —
  // without the bf16 rows and their pack.
  void (*dequant_amx)(const PackedWeights& w, int64_t n0, int64_t n1, uint16_t* panel) = nullptr;
  // Optional: run() in two parts, for a caller that computes many slices of one product
  // on one thread (graph::run_projections' shares: one preparation for the q and k
  // slices of a share). prepare(w, x, ldx, rows, scratch) does on the calling thread what run()
  // does to the inputs before any product, into scratch; run_prepared(w, bias, x, ldx, y,
  // ldy, rows, threads, scratch) then computes the products on the calling thread alone
  // (threads is ignored) as run() would, from the same x and that scratch. What prepare
  // leaves depends on x, rows, w.K and w.Kp only: one prepare serves every slice of the
  // weights (w.data, w.N) and every matrix of the same entry and K.
  void (*prepare)(const PackedWeights& w, const float* x, int64_t ldx, int rows, void* scratch) = nullptr;
  LinearRunFn run_prepared = nullptr;
};

// One registry line.
struct LinearKernel {
  WeightType type;
  Isa isa;
  const char* symbol;
  const LinearKernelImpl* impl;
};

// The registry, in linear.inc order.
KernelList<LinearKernel> linear_kernels();

// The best kernel of w's type that runs on `isa` (an entry of that ISA or a lower one,
// kernels/registry.hpp) and supports `w`; null when there is none.
const LinearKernel* linear_kernel(const PackedWeights& w, Isa isa);

}  // namespace headwise::kernels
