// Small-M products against oneDNN's blocked weight layout, for decode.
//
// For M ≤ kGemvMaxRows rows (one token, or one token of each of a few sequences) a
// matmul is a pass over the weights: bound by reading them, not by arithmetic. oneDNN
// 2.6's matmul reads them at about half the machine's bandwidth there, so these
// kernels stream the SAME packed weights (no second copy) with every load feeding FMAs.
//
// The layout (what oneDNN picks for fp32 on AVX-512 and AVX2): logical W is K×N; the
// memory is [N/NB][K/KB][KB][NB] — for each block of NB outputs, all of K in slabs of KB
// rows of NB consecutive floats ("BA16a64b" when KB = 16, NB = 64). K and N are padded
// up to whole blocks with zeros.
#pragma once

#include <cstdint>

#include "kernels/dispatch.hpp"

namespace headwise::kernels {

constexpr int kGemvMaxRows = 8;

struct BlockedWeights {
  const float* w = nullptr;
  int K = 0, N = 0;           // logical sizes
  int KB = 0, NB = 0;         // block sizes
  int Kp = 0;                 // K padded to a multiple of KB
};

// y(r, n) = Σ_k x(r, k)·W(k, n) + bias(n), for n in [n0, n1) with n0, n1 multiples of NB
// (n1 may be N for the last block). x rows are ldx apart and have Kp readable floats
// (zero beyond K); y rows ldy apart. rows ≤ kGemvMaxRows.
using GemvFn = void (*)(const BlockedWeights& w, const float* bias, const float* x, int64_t ldx,
                        float* y, int64_t ldy, int rows, int n0, int n1);

// The kernel for an ISA and NB (null when NB is not one it handles).
GemvFn gemv_kernel(Isa isa, int NB);

}  // namespace headwise::kernels
