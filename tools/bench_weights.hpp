// `headwise bench --synthetic NAME --weights TYPE`: the synthetic model with its weight
// matrices quantized at load (runtime/synthetic.hpp: formats/quantize_gguf's choice of
// type per tensor, the catalogue's quantizers), and the peak of the arithmetic those
// weights' prefill runs on, so the prefill GEMMs are reported against it too.
#pragma once

#include <memory>
#include <string>

#include "bench/probe/peak.hpp"
#include "graph/plan.hpp"
#include "headwise/model.hpp"
#include "tools/args.hpp"

namespace headwise::tools {

// "" when --weights is absent or valid for this command line, else the usage error
// (it names --weights).
std::string bench_weights_error(const Args& args, bool synthetic);

// Model::synthetic with --weights applied (`mix`: its value; empty: f32). `types` gets
// what the matrices became ("q4_0 ×84, q6_k ×1"), "" for f32.
Status load_bench_synthetic(const std::string& mix, const std::string& name, uint64_t seed,
                            std::shared_ptr<const Model>* out, std::string* types);

// The matrices a loaded model's plan multiplies by, as a --weights mix for
// bench_weights_peak: "bf16" when every projection is BF16, "q8_0" (the int8 dot
// peak's family) when every one is of an integer type, "f16" when every one is F16,
// "" otherwise (f32, or a mix
// of float and integer types: the FMA peak applies). `types` gets their count by type
// ("bf16 ×85"; "q4_k ×72, q6_k ×13").
std::string stored_weights_mix(const graph::Plan& plan, std::string* types);

// The dot-product peak the --weights mix's prefill multiplies with on kernel ISA `isa`,
// for `threads` threads and `rows` rows a GEMM. Where the probe measured AMX's tiles
// (peak.tile_bf16_*: kernels may use AMX), the AMX panels' (graph/widened16.hpp): bf16,
// the integer types from Projection::kAmxDequantMinRows rows → the tile GFLOP/s, f16 →
// a third of it (three products a value). Else avx512: bf16 → vdpbf16ps GFLOP/s (oneDNN's
// bf16 matmul), q8_0/q4_0/q3_k/q4_k/q5_k/q6_k/iq4_xs and the mixes → vpdpbusd GOP/s (int8 tiles);
// avx2: the integer types → vpmaddubsw GOP/s, bf16 → 0 (widened to fp32 in registers:
// the FMA peak applies, as for f16 without AMX). `what` gets its name ("AMX bf16 tile" /
// "bf16 dot" / "int8 dot" / "int8 dot avx2" / "a third of the AMX bf16 tile"). 0 when unknown or unmeasured.
double bench_weights_peak(const std::string& mix, const std::string& isa, const MachinePeak& peak, int threads,
                          int rows, std::string* what);

}  // namespace headwise::tools
