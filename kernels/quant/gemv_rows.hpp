// The row loop shared by every type × ISA: y(m, n) = dot(W row n, prepared input m).
// A weight row is read from memory once and stays in L1 for the M ≤ a few inputs of a
// decode step (row bytes are K·bits/8: 4 KiB for K = 8192 at 4 bits).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {
namespace {

// Dot(w_row, xa_row, K) → float.
template <float (*Dot)(const uint8_t*, const uint8_t*, int64_t)>
void gemv_rows(const void* w, size_t row_bytes, int64_t n0, int64_t n1, const void* xa,
               size_t act_bytes, int M, int64_t K, float* y, int64_t ldy) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(xa);
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wr = wb + size_t(n) * row_bytes;
    for (int m = 0; m < M; ++m) y[m * ldy + n] = Dot(wr, ab + size_t(m) * act_bytes, K);
  }
}

// Input rows up to which the caller prepares them alone before the threads start (a
// decode step's one row: 768-8192 values to round, well under a microsecond) instead
// of splitting them over the threads, which then wait for each other: on this
// project's 2-core VM that barrier costs ~1.4 us, a quarter of a 768x768 Q4_K product
// (its fork and join ~3 us more: one thread, e.g. a share of graph::run_projections,
// runs without a parallel region).
constexpr int kSerialPrepareRows = 2;

}  // namespace
}  // namespace headwise::kernels::quant
