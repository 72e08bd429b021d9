// The row loop shared by every type × ISA: y(m, n) = dot(W row n, prepared input m).
// A weight row is read from memory once and stays in L1 for the M ≤ a few inputs of a
// decode step (row bytes are K·bits/8: 4 KiB for K = 8192 at 4 bits).
#pragma once

#include <omp.h>

#include <cstddef>
#include <cstdint>

#include "kernels/matmul/linear.hpp"
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

// The shape every weight-type entry's run() has: prepare(r) for each input row, then
// share(t, n) on each of nt threads (its part of the output rows). Up to
// kSerialPrepareRows rows, or on one thread, the caller prepares them before the
// threads start; more are split over the threads (then a barrier). One thread: no
// parallel region at all.
//
// `steps`: all of that, or one part on the calling thread alone (the entries' prepare and
// run_prepared, kernels/matmul/linear.hpp): every row's prepare(r), or share(0, 1) on
// inputs an earlier prepare left in scratch.
enum class Steps { all, prepare, products };
template <class Prepare, class Share>
void prepare_then_share(int rows, int nt, Prepare&& prepare, Share&& share, Steps steps = Steps::all) {
  if (steps == Steps::prepare) {
    for (int r = 0; r < rows; ++r) prepare(r);
    return;
  }
  if (steps == Steps::products) return share(0, 1);
  const bool serial = nt == 1 || rows <= kSerialPrepareRows;
  if (serial)
    for (int r = 0; r < rows; ++r) prepare(r);
  if (nt == 1) return share(0, 1);
#pragma omp parallel num_threads(nt)
  {
    if (!serial) {
#pragma omp for schedule(static)
      for (int r = 0; r < rows; ++r) prepare(r);
    }
    share(omp_get_thread_num(), omp_get_num_threads());
  }
}

// An entry's run(), prepare() and run_prepared() (kernels/matmul/linear.hpp) from its
// E::steps(w, bias, x, ldx, y, ldy, rows, threads, scratch, Steps), which hands the
// Steps to prepare_then_share.
template <class E>
struct StepsEntry {
  static void run(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y, int64_t ldy,
                  int rows, int threads, void* scratch) {
    E::steps(w, bias, x, ldx, y, ldy, rows, threads, scratch, Steps::all);
  }
  static void prepare(const PackedWeights& w, const float* x, int64_t ldx, int rows, void* scratch) {
    E::steps(w, nullptr, x, ldx, nullptr, 0, rows, 1, scratch, Steps::prepare);
  }
  static void run_prepared(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y,
                           int64_t ldy, int rows, int, void* scratch) {
    E::steps(w, bias, x, ldx, y, ldy, rows, 1, scratch, Steps::products);
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
