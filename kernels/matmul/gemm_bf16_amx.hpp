// Prefill products on AMX tiles (TDPBF16PS): Y(M×N) = X(M×K)·Wᵀ (+ b), both operands
// bf16, sums in fp32 — the numbers of oneDNN's bf16 matmul, which this replaces where a
// projection's weights are dequantized per call (graph/widened16.hpp): there oneDNN
// 2.6 reached 1.0-1.2 TFLOP/s on two cores (llama-1b-like, 512 rows), while these
// panels, dequantized into L2 just before their products, run at 2-2.7 (bench/README.md,
// "Session 25").
//
// Shapes of the work: the weights come in panels of 32 columns (output features), each
// packed once per call (amx_pack_panel_bf16) as the B operand's tiles — per 32 values of
// K, two 16×16 tiles of bf16 pairs; the inputs are bf16 rows (the A operand, loaded as
// tiles straight from the rows); one panel's products then run over every input row in
// 2×2 blocks of 16×16 fp32 accumulators (32 rows × 32 columns), which stay in tiles for
// the whole of K and are stored once, straight into y.
//
// Compute only: pointers, shapes, strides. Call only where kernels::amx_usable(): each
// call configures the calling thread's tiles and releases them on return.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/elementwise/elementwise.hpp"

namespace headwise::kernels {

constexpr int kAmxPanelCols = 32;  // weight rows (output columns) per panel
constexpr int kAmxK = 32;          // K is a multiple of this (one tile's bf16 pairs)

// Elements between the bf16 input rows the products read, for K (a multiple of kAmxK):
// K, or K + 32 where K's rows would be an even number of 64-byte lines apart — tile rows
// that many lines apart share L1 sets (4 KiB apart for K = 2048: 2.5× slower there).
inline int64_t amx_rows_ld(int64_t K) { return (K / 32) % 2 ? K : K + 32; }

// Elements of one packed panel.
inline size_t amx_panel_elems(int64_t K) { return size_t(kAmxPanelCols) * size_t(K); }

// Split bf16 (for operands bf16 would round too far: F16 weights, their fp32 inputs):
// v = hi + lo with hi = bf16(v) (round to nearest even) and lo = bf16(v − hi) — exact
// for an f16 v (11 significant bits), within 2⁻¹⁷·|v| for an fp32 one. Three products
// then stand for x·w: xhi·whi + xhi·wlo + xlo·whi (the dropped xlo·wlo is below
// 2⁻¹⁸·|x·w|), laid along K as one bf16 product of depth 3K:
//   input rows [xhi | xhi | xlo], weight rows [whi | wlo | whi].
// Each writes 3K values at out.
void amx_split_input_row(const float* x, int64_t K, uint16_t* out);
void amx_split_f16_weight_row(const uint16_t* w, int64_t K, uint16_t* out);

// Packs 32 bf16 weight rows (w, ldw elements apart; K a multiple of kAmxK) into a panel:
// for each 32 values of K, two B tiles (columns 0-15, 16-31), each 16 rows of 16 column
// pairs: panel[((s·2 + c)·16 + r)·32 + 2n + e] = w[(16c + n)·ldw + 32s + 2r + e].
// Rows the projection does not have must be zeros in w (their outputs are not stored).
void amx_pack_panel_bf16(const uint16_t* w, int64_t ldw, int64_t K, uint16_t* panel);

// y(m, j) = Σ_k x(m, k)·W(j, k) (+ bias[j]) for m < M and j < cols, W's rows packed as
// ceil(cols / 32) consecutive panels (amx_panel_elems(K) apart): x rows of bf16, ldx
// elements apart (ldx·2 a multiple of 64, x 64-byte aligned; see amx_rows_ld), M a
// multiple of 16, K of kAmxK; y rows ldy floats apart; bias null or cols floats. Rows
// outer, panels inner: 32 input rows (32·K·2 bytes) stay in L1/L2 while every panel —
// which the caller keeps in this core's L2 — passes them.
void amx_gemm_panels_bf16(const uint16_t* x, int64_t ldx, int M, int64_t K, const uint16_t* panels, int cols,
                          const float* bias, float* y, int64_t ldy);

// A gated pair (a SwiGLU FFN's gate and up): y = combine(x·Wgᵀ (+ bg), x·Wuᵀ (+ bu)),
// shapes and operands as above, the two matrices' panels for the same columns one after
// the other over each 32-row block. Their accumulators go to two 32 × 32 blocks on the
// stack, from which `combine` (the plan's element-wise swiglu: the very function the
// unfused op runs, so the results are identical) writes y's rows one 16-value vector at
// a time between the next pair's tile products (formed right after their own products,
// the tile unit idled meanwhile and the pair ran no faster than the ops apart) — the gate
// and up products never reach memory, and the separate op's read of both and its write go.
using AmxCombine = SwigluRowsFn;  // (elementwise.hpp)
void amx_gemm_panels_gated_bf16(const uint16_t* x, int64_t ldx, int M, int64_t K, const uint16_t* gate_panels,
                                const uint16_t* up_panels, int cols, const float* gate_bias, const float* up_bias,
                                AmxCombine combine, float* y, int64_t ldy);

}  // namespace headwise::kernels
