// Row-wise and element-wise kernels around the GEMMs and attention: norms,
// activations, residual adds, RoPE and the embedding gather.
//
// Every tensor is rows × cols floats with a row stride (in floats); cols contiguous.
// In-place use (y == x) is allowed wherever y and x have the same shape and stride.
// Each function runs the kernels of the ElemKernels it is given — a line of
// elementwise.inc, chosen once by whoever holds it (the plan, for a model: see
// kernels/registry.hpp) — and splits rows over `threads` OpenMP threads (0 = all; 1
// inside a parallel region). Pure compute: no allocation, no errors.
#pragma once

#include <cstdint>

#include "kernels/registry.hpp"

namespace headwise::kernels {

struct ElemFns;  // one ISA's functions (elementwise_impl.hpp)

// One line of elementwise.inc.
struct ElemKernels {
  Isa isa;
  const char* name;  // the table's symbol, e.g. "elementwise_f32__avx2"
  const ElemFns* fns;
};

// The list, in elementwise.inc order, and its best line for `isa` (every ISA has one:
// the list ends with scalar).
KernelList<ElemKernels> elementwise_kernels();
const ElemKernels& elementwise_kernel(Isa isa);

struct RowsIn {
  const float* data;
  int64_t stride;
};
struct RowsOut {
  float* data;
  int64_t stride;
};

// y = x / sqrt(mean(x²) + eps) ⊙ w
void rmsnorm(const ElemKernels& k, RowsIn x, const float* w, float eps, RowsOut y, int rows,
             int cols, int threads);

// y = (x − mean(x)) / sqrt(var(x) + eps) ⊙ w + b   (b may be null)
void layernorm(const ElemKernels& k, RowsIn x, const float* w, const float* b, float eps,
               RowsOut y, int rows, int cols, int threads);

// In place: x = silu(x) = x·σ(x)
void silu(const ElemKernels& k, RowsOut x, int rows, int cols, int threads);
// In place: x = gelu(x), tanh approximation (GPT-2): ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
void gelu_tanh(const ElemKernels& k, RowsOut x, int rows, int cols, int threads);
// In place: x = gelu(x), exact: ½x(1 + erf(x/√2))
void gelu_erf(const ElemKernels& k, RowsOut x, int rows, int cols, int threads);

// y = silu(a) ⊙ b
void swiglu(const ElemKernels& k, RowsIn a, RowsIn b, RowsOut y, int rows, int cols, int threads);
// The same, one thread, as a plain function of the line: for a kernel that forms y a
// block at a time from products it holds (kernels/matmul/gemm_bf16_amx.hpp's gated pair).
using SwigluRowsFn = void (*)(RowsIn a, RowsIn b, RowsOut y, int rows, int cols);
SwigluRowsFn swiglu_rows(const ElemKernels& k);
// y = a + b
void add(const ElemKernels& k, RowsIn a, RowsIn b, RowsOut y, int rows, int cols, int threads);
// y = a ⊙ b
void mul(const ElemKernels& k, RowsIn a, RowsIn b, RowsOut y, int rows, int cols, int threads);

// y(r, :) = table(ids[r], :) for a (vocab, cols) table; ids are valid (checked above).
void embedding(const float* table, int cols, const int32_t* ids, RowsOut y, int rows,
               int threads);

// Rotary position embedding, in place, on the first `heads·head_dim` columns of each
// row; row r is at position pos[r]. Per head, feature pairs are rotated by the angle
// pos·θ^(−2i/head_dim) for pair i < head_dim/2:
//   interleaved (llama2.c / Meta Llama): pair i = features (2i, 2i+1)
//   half (GPT-NeoX / HF Llama):         pair i = features (i, i + head_dim/2)
// cos_table / sin_table hold (max_pos, head_dim/2) values from rope_tables().
enum class RopeStyle { interleaved, half };
void rope(const ElemKernels& k, RowsOut x, int rows, int heads, int head_dim,
          const int32_t* pos, const float* cos_table, const float* sin_table, RopeStyle style,
          int threads);

// Fills (max_pos, head_dim/2) tables with cos and sin of pos·θ^(−2i/head_dim), computed
// in float exactly as llama2.c does (freq = 1/powf(θ, 2i/head_dim), val = pos·freq),
// so that checkpoints trained and checked with it reproduce bit for bit.
void rope_tables(float theta, int head_dim, int max_pos, float* cos_table, float* sin_table);

}  // namespace headwise::kernels
