// Machine-limit probes: the fp32 FMA throughput of one ISA on the calling thread and
// the rate one thread can read memory. Pure compute, one ISA per translation unit;
// the driver that times them lives in bench/probe/peak.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace headwise::kernels {

// Runs `iters` rounds of independent FMA chains and returns the flops performed
// (the result must be consumed so the compiler keeps the work).
double fma_probe_avx512(int64_t iters, float* sink);
double fma_probe_avx2(int64_t iters, float* sink);

// The bf16 (vdpbf16ps) and int8 (vpdpbusd) dot-product rates, as flops/ops performed
// (2 per multiply-add); AVX512-BF16 / AVX512-VNNI CPUs only.
double dot_bf16_probe_avx512(int64_t iters, float* sink);
double dot_int8_probe_avx512(int64_t iters, float* sink);
// The int8 rate without VNNI: vpmaddubsw (32 u8·s8 multiply-adds), 2 ops each.
double dot_int8_probe_avx2(int64_t iters, float* sink);

// The AMX bf16 tile product rate (TDPBF16PS on four accumulators), flops performed;
// only where kernels::amx_usable().
double tile_bf16_probe_amx(int64_t iters, float* sink);

// Reads n floats (n a multiple of 64) with the widest loads available and returns a sum
// so the reads cannot be elided.
float read_probe_avx512(const float* p, size_t n);
float read_probe_avx2(const float* p, size_t n);

}  // namespace headwise::kernels
