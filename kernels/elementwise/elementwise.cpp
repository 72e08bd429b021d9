// Element-wise threading and the list of elementwise.inc. Each call runs the ISA table
// it is handed and splits the rows into contiguous blocks, one per OpenMP thread.
// rope_tables and the embedding gather do no arithmetic that depends on the ISA, so they
// live here. The code is ISA-agnostic.
#include <omp.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/elementwise/elementwise.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"

namespace headwise::kernels {

#define HW_ELEM_KERNELS(isa, table_symbol) extern const ElemFns table_symbol;
#include "kernels/elementwise/elementwise.inc"
#undef HW_ELEM_KERNELS

namespace {

const ElemKernels kList[] = {
#define HW_ELEM_KERNELS(isa, table_symbol) {Isa::isa, #table_symbol, &table_symbol},
#include "kernels/elementwise/elementwise.inc"
#undef HW_ELEM_KERNELS
};

// Below this many floats a call runs on one thread. Starting a parallel region costs
// microseconds, and that is as long as the kernels take to stream 32K floats.
constexpr int64_t kMinParallelFloats = 32 * 1024;

int team_size(int rows, int64_t floats, int threads) {
  if (omp_in_parallel()) return 1;  // never nest parallel regions
  if (threads <= 0) threads = omp_get_max_threads();
  if (floats < kMinParallelFloats) return 1;
  return std::max(1, std::min(threads, rows));
}

// Calls f(r0, r1) on contiguous row blocks [r0, r1) that cover [0, rows), one block per
// thread. `floats` is the size of the problem, which decides whether threads pay off.
template <class F>
void for_row_blocks(int rows, int64_t floats, int threads, const F& f) {
  const int team = team_size(rows, floats, threads);
  if (team <= 1) {
    f(0, rows);
    return;
  }
#pragma omp parallel num_threads(team)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int r0 = static_cast<int>(int64_t(rows) * t / nt);
    const int r1 = static_cast<int>(int64_t(rows) * (t + 1) / nt);
    if (r0 < r1) f(r0, r1);
  }
}

RowsIn from(RowsIn x, int r) { return {x.data + r * x.stride, x.stride}; }
RowsOut from(RowsOut x, int r) { return {x.data + r * x.stride, x.stride}; }

// Rows must not overlap: more than one row needs a stride of at least cols.
[[maybe_unused]] bool rows_ok(int64_t stride, int rows, int cols) {
  return rows <= 1 || stride >= cols;
}

}  // namespace

KernelList<ElemKernels> elementwise_kernels() { return kernel_list(kList); }

const ElemKernels& elementwise_kernel(Isa isa) {
  const ElemKernels* k = select(elementwise_kernels(), isa);
  return k ? *k : kList[sizeof(kList) / sizeof(kList[0]) - 1];  // the list ends with scalar
}

void rmsnorm(const ElemKernels& k, RowsIn x, const float* w, float eps, RowsOut y, int rows,
             int cols, int threads) {
  assert(rows >= 0 && cols >= 1 && rows_ok(x.stride, rows, cols) && rows_ok(y.stride, rows, cols));
  for_row_blocks(rows, int64_t(rows) * cols, threads, [&](int r0, int r1) {
    k.fns->rmsnorm(from(x, r0), w, eps, from(y, r0), r1 - r0, cols);
  });
}

void layernorm(const ElemKernels& k, RowsIn x, const float* w, const float* b, float eps,
               RowsOut y, int rows, int cols, int threads) {
  assert(rows >= 0 && cols >= 1 && rows_ok(x.stride, rows, cols) && rows_ok(y.stride, rows, cols));
  for_row_blocks(rows, int64_t(rows) * cols, threads, [&](int r0, int r1) {
    k.fns->layernorm(from(x, r0), w, b, eps, from(y, r0), r1 - r0, cols);
  });
}

namespace {
using UnaryFn = void (*)(RowsOut, int, int);
using BinaryFn = void (*)(RowsIn, RowsIn, RowsOut, int, int);

void run_unary(UnaryFn fn, RowsOut x, int rows, int cols, int threads) {
  assert(rows >= 0 && cols >= 0 && rows_ok(x.stride, rows, cols));
  for_row_blocks(rows, int64_t(rows) * cols, threads,
                 [&](int r0, int r1) { fn(from(x, r0), r1 - r0, cols); });
}

void run_binary(BinaryFn fn, RowsIn a, RowsIn b, RowsOut y, int rows, int cols, int threads) {
  assert(rows >= 0 && cols >= 0 && rows_ok(a.stride, rows, cols) && rows_ok(b.stride, rows, cols) &&
         rows_ok(y.stride, rows, cols));
  for_row_blocks(rows, int64_t(rows) * cols, threads,
                 [&](int r0, int r1) { fn(from(a, r0), from(b, r0), from(y, r0), r1 - r0, cols); });
}
}  // namespace

void silu(const ElemKernels& k, RowsOut x, int rows, int cols, int threads) {
  run_unary(k.fns->silu, x, rows, cols, threads);
}
void gelu_tanh(const ElemKernels& k, RowsOut x, int rows, int cols, int threads) {
  run_unary(k.fns->gelu_tanh, x, rows, cols, threads);
}
void gelu_erf(const ElemKernels& k, RowsOut x, int rows, int cols, int threads) {
  run_unary(k.fns->gelu_erf, x, rows, cols, threads);
}
void swiglu(const ElemKernels& k, RowsIn a, RowsIn b, RowsOut y, int rows, int cols,
            int threads) {
  run_binary(k.fns->swiglu, a, b, y, rows, cols, threads);
}
SwigluRowsFn swiglu_rows(const ElemKernels& k) { return k.fns->swiglu; }
void add(const ElemKernels& k, RowsIn a, RowsIn b, RowsOut y, int rows, int cols,
         int threads) {
  run_binary(k.fns->add, a, b, y, rows, cols, threads);
}
void mul(const ElemKernels& k, RowsIn a, RowsIn b, RowsOut y, int rows, int cols,
         int threads) {
  run_binary(k.fns->mul, a, b, y, rows, cols, threads);
}

void embedding(const float* table, int cols, const int32_t* ids, RowsOut y, int rows, int threads) {
  assert(rows >= 0 && cols >= 0 && rows_ok(y.stride, rows, cols));
  for_row_blocks(rows, int64_t(rows) * cols, threads, [&](int r0, int r1) {
    for (int r = r0; r < r1; ++r)
      std::memcpy(y.data + r * y.stride, table + int64_t(ids[r]) * cols, sizeof(float) * cols);
  });
}

void rope(const ElemKernels& k, RowsOut x, int rows, int heads, int head_dim,
          const int32_t* pos, const float* cos_table, const float* sin_table, RopeStyle style,
          int threads) {
  assert(rows >= 0 && heads >= 0 && head_dim >= 2 && head_dim % 2 == 0);
  assert(rows_ok(x.stride, rows, heads * head_dim));
  for_row_blocks(rows, int64_t(rows) * heads * head_dim, threads, [&](int r0, int r1) {
    k.fns->rope(from(x, r0), r1 - r0, heads, head_dim, pos + r0, cos_table, sin_table, style);
  });
}

// llama2.c's forward() computes, for each even feature index 2i of a head:
//   float freq = 1.0f / powf(10000.0f, head_dim / (float)head_size);  // head_dim = 2i
//   float val = pos * freq;
//   float fcr = cosf(val), fci = sinf(val);
// The same float operations in the same order make the tables bit-identical.
void rope_tables(float theta, int head_dim, int max_pos, float* cos_table, float* sin_table) {
  assert(head_dim >= 2 && head_dim % 2 == 0 && max_pos >= 0);
  const int half = head_dim / 2;
  for (int pos = 0; pos < max_pos; ++pos)
    for (int i = 0; i < half; ++i) {
      const float freq =
          1.0f / powf(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
      const float val = static_cast<float>(pos) * freq;
      cos_table[int64_t(pos) * half + i] = cosf(val);  // (max_pos, half)
      sin_table[int64_t(pos) * half + i] = sinf(val);
    }
}

}  // namespace headwise::kernels
