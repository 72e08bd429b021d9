// Weight types stored and computed natively (never expanded to fp32 in memory): the
// catalogue of GGUF types headwise reads, quantizes and multiplies.
//
// A weight matrix of a linear layer y = W·x is N rows of K elements in the type's
// row layout (GGUF's: K / block blocks back to back, blocks.hpp). Products run against
// activations prepared once per input row (prepare_activations): fp32 for F16, bf16
// for BF16 (vdpbf16ps multiplies bf16 pairs), int8 blocks (BlockQ8A) for the integer
// types, so the inner loops are integer dot products.
//
// Kernels: one file per type × ISA (<type>_scalar.cpp, <type>_avx2.cpp,
// <type>_avx512.cpp). Each defines the type's linear-registry entry
// (kernels/matmul/linear.inc); the products on rows as stored (GemvFn) are listed once
// in quant.inc: every type's scalar one, and F16/BF16's avx2/avx512 ones (the integer
// types' x86 entries read weights repacked at load into 8-row panels instead). The
// avx512 files also use AVX512-VNNI (vpdpbusd) and AVX512-BF16 (vdpbf16ps);
// gemv_kernel() and the registry hand them out only on a CPU that has those too (else
// the avx2 entry).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dispatch.hpp"

namespace headwise::kernels::quant {

// ggml's type ids (what GGUF stores per tensor).
// q4_1, q5_0, q5_1 and iq4_nl are read at load only (load_only.cpp): not in the
// catalogue, no type_info().
enum class WType : uint32_t {
  f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14, iq4_nl = 20, iq4_xs = 23,
  bf16 = 30,
  // headwise's own, for Hugging Face GPTQ/AWQ weights with zero points (blocks.hpp's
  // BlockQ4_0C, BlockQ8_0C): read at load only, never written to a file
  q4_0c = 0x10002, q8_0c = 0x10008
};

// What a type's products take as input rows.
enum class ActKind { f32, bf16, q8a };

// y(m, n) = Σ_k W(n, k) · xa_m(k) for rows n in [n0, n1) and inputs m < M.
// W rows are row_bytes apart, prepared input rows act_bytes apart, y rows ldy floats
// apart (y(m, n) at y[m·ldy + n]). K is a multiple of the type's block.
using GemvFn = void (*)(const void* w, size_t row_bytes, int64_t n0, int64_t n1, const void* xa,
                        size_t act_bytes, int M, int64_t K, float* y, int64_t ldy);

// K elements of one row: quantize (reference, scalar; K a multiple of the block) and
// dequantize.
using QuantizeFn = void (*)(const float* x, void* out, int64_t K);
using DequantizeFn = void (*)(const void* w, float* out, int64_t K);

struct TypeInfo {
  WType type;
  const char* name;  // GGUF/ggml spelling: "q4_K", "bf16", ...
  int block;         // elements per block
  int block_bytes;
  ActKind act;
  QuantizeFn quantize;
  DequantizeFn dequantize;
};

// Null for a type not in the catalogue (f32 is not: it has its own packed path).
const TypeInfo* type_info(WType t);
// The catalogue's types, for tests, tools and benchmarks.
const WType* all_types(int* count);
// Parses "bf16", "f16", "q8_0", "q4_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_xs"
// (case-insensitive).
bool parse_wtype(const char* s, WType* out);

// GGUF Q5_0 blocks (`blocks` of them, back to back) as Q8_0 blocks with the same d and
// q − 16 as the int8 values: the same numbers exactly (every Q5_0 weight d·(q − 16),
// q − 16 ∈ [−16, 15], is a Q8_0 weight), 34 bytes for 22. llama-quantize writes Q5_0
// where a Q4_K row is not whole 256-blocks (a Q4_K_M file of a model whose width is
// 576, 896, ...), so such files load and run on the Q8_0 kernels.
void q5_0_to_q8_0(const void* q5_0, void* q8_0, int64_t blocks);
// K elements of Q5_0 rows (blocks back to back) as floats: d·(q − 16), ggml's numbers.
void dequantize_q5_0(const void* w, float* out, int64_t K);

// GGUF Q4_1 and Q5_1 (load_only.cpp): blocks of 32 with an f16 scale d and an f16
// offset m, x = d·q + m, q ∈ [0, 15] / [0, 31]. llama-quantize writes Q5_1 where a Q5_K
// row is not whole 256-blocks (a Q5_K_M file of a model 576 or 896 wide), Q4_1 on
// request. They are not computed on: the loader's products re-encode them as Q8_0 rows
// with the same d and q − o (o = 8 for Q4_1, 16 for Q5_1: every such weight fits int8)
// and each block's offset c = m + o·d as an f32, so x = d·(q − o) + c — the same number
// but for c's one f32 rounding (none where m and o·d are within a factor of 2¹³) —
// and a product is the Q8_0 one plus Σ_blocks c·(the block's sum of the inputs)
// (graph/projection.hpp, create_offset_blocks).
// Dequantization as ggml's: float(q)·d + m (d·q is exact in f32).
void dequantize_q4_1(const void* w, float* out, int64_t K);
void dequantize_q5_1(const void* w, float* out, int64_t K);
// `blocks` blocks (back to back) as Q8_0 blocks and their offsets, one float a block.
void q4_1_to_q8_0(const void* q4_1, void* q8_0, float* offsets, int64_t blocks);
void q5_1_to_q8_0(const void* q5_1, void* q8_0, float* offsets, int64_t blocks);
// GGUF IQ4_NL blocks as Q8_0 blocks with the same d and the grid's levels
// (kIq4Values[q], all int8) as the int8 values: the same numbers exactly, 34 bytes for 18.
// llama-quantize writes IQ4_NL where an IQ4_XS row is not whole 256-blocks, and in its
// IQ4_NL mix.
void iq4_nl_to_q8_0(const void* iq4_nl, void* q8_0, int64_t blocks);
// K elements of IQ4_NL rows as floats: d·kIq4Values[q], ggml's numbers.
void dequantize_iq4_nl(const void* w, float* out, int64_t K);

// Q4_0C and Q8_0C blocks (blocks.hpp) split into their Q4_0 / Q8_0 blocks and offsets,
// and dequantized: the base block's value plus c (x = d·(q − z), exact in f32 where d·(q − z)
// is: |q − z| < 2⁸ and d an f16).
void q4_0c_split(const void* q4_0c, void* q4_0, float* offsets, int64_t blocks);
void q8_0c_split(const void* q8_0c, void* q8_0, float* offsets, int64_t blocks);
void dequantize_q4_0c(const void* w, float* out, int64_t K);
void dequantize_q8_0c(const void* w, float* out, int64_t K);

// Bytes of a block of a type read at load only (Q5_0, Q4_1, Q5_1, IQ4_NL, Q4_0C, Q8_0C: blocks of
// kLoadOnlyBlock elements), or 0.
constexpr int kLoadOnlyBlock = 32;
int load_only_block_bytes(WType t);

// Bytes of one row of K elements (K a multiple of the block).
inline size_t row_bytes(const TypeInfo& t, int64_t K) { return size_t(K / t.block) * t.block_bytes; }

// Bytes of one prepared input row of K elements.
size_t act_row_bytes(ActKind a, int64_t K);
// Prepares one input row of K fp32 values for a type's products (K a multiple of
// kQK for q8a).
void prepare_activations(ActKind a, const float* x, void* out, int64_t K);
// The values a prepared row stands for (what the products multiply), for references.
void activation_values(ActKind a, const void* xa, double* out, int64_t K);

// The product kernel on rows as stored of a type for an ISA (quant.inc); null if the
// catalogue has none (the integer types on avx2/avx512) or the CPU cannot run it (the
// avx512 entry on a CPU without VNNI/BF16 gives the avx2 one).
GemvFn gemv_kernel(WType t, Isa isa);

// True when avx512 kernels of this catalogue can run here (AVX512 F/BW/DQ/VL + VNNI + BF16).
bool cpu_has_avx512_vnni_bf16();

// True on CPUs whose 256-bit integer multiplies (vpmaddubsw, vpmaddwd) run as two 128-bit
// halves on one pipe: AMD Zen 1 and Zen+ (family 17h, models below 30h). There Q8_0's
// avx2 prefill is faster as an fp32 GEMM (interleave_x86.hpp, Q8Fp32); elsewhere its int8
// tile is (Zen 3, 2026-12-02, llama-134m Q8_0, 512-token prefill, 2 threads, binaries
// alternating: 566-648 → 733-794 tok/s over 3 rounds; in 3 earlier ones 597-633 →
// 578-759). Asked when a plan sizes and runs a product, answered from one cpuid.
bool cpu_int8_multiply_slow();
// Tests: 1 or 0 forces the answer, -1 restores detection. Set it only while no product
// is sized or running (scratch_bytes and run must see the same answer).
void set_int8_multiply_slow_override(int v);

// Whether decode's weight streams are asked for ahead with one non-temporal request a
// line (true) or into the caches (false). The 16-bit rows (BF16 on avx512, BF16/F16
// panels on avx2): else dot_x86.hpp's ahead() on avx512, an L1 request 8 KiB ahead on
// avx2. On avx512 also the K-quant 16-row panels (panel_k_x86.hpp's V16Nta, else V16Far:
// ahead()'s far request alone; dot_x86.hpp's ahead_nta has the figures). Non-temporal only
// on AMD, where it measured faster: Zen 5's AVX-512 and the avx2 panels on Zen 1 and 3 —
// not Zen 4's avx512 (family 19h, which runs 512-bit operations as two halves), where
// ahead() won. On Intel a non-temporal line is not kept in the L3, so a model the L3
// could hold is read from DRAM every token: session 23's Xeon (480 MiB of L3), llama-134m
// BF16 decode 41-42 -> 121-128 tok/s on avx512, 54-56 -> 107-109 on avx2 (bf16_avx512.cpp
// has the figures). Asked on every such decode call, answered from one cpuid.
bool cpu_decode_nontemporal(Isa isa);
// Tests: 1 or 0 forces the answer for every ISA, -1 restores detection.
void set_decode_nontemporal_override(int v);

// True on an Intel CPU (cpuid's vendor string), whose caches do not keep a line asked for
// with prefetchnta in the L3 (kernels/matmul/linear_f32_gemv_impl.hpp, prefetch_row).
bool cpu_is_intel();

// True on CPUs whose AVX512-BF16 dot product (vdpbf16ps) runs below the fp32 FMA rate:
// Intel's. Measured on an Emerald Rapids VM without AMX (2026-12-03): the peak probe's
// bf16 dot 82 GFLOP/s a core against fp32 FMA 166, and oneDNN's bf16 matmul 75-83
// against its f32 matmul 135-170; Intel's other AVX512-BF16 CPUs (Cooper Lake, Sapphire
// Rapids) are assumed alike, not measured. Zen 4 runs it at twice the fp32 rate. Where the CPU has AMX, oneDNN's bf16 matmul runs on AMX instead and
// this is not asked (graph/projection.cpp). BF16 prefill then runs as an fp32 GEMM on
// widened weights (graph/widened16.hpp). One cpuid, asked when a plan is built.
bool cpu_bf16_dot_slow();
// Tests: 1 or 0 forces the answer, -1 restores detection (read when a projection is made).
void set_bf16_dot_slow_override(int v);

}  // namespace headwise::kernels::quant
