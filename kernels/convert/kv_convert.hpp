// Rows of fp32 into a 16-bit KV cache (round to nearest even, NaN kept) and back out
// (exact): how a session writes the K/V rows its projections computed, and how the
// attention hook gets fp32 K/V from a 16-bit cache. Every ISA gives the same bits as
// the scalar conversions of kernels/simd/half.hpp.
#pragma once

#include <cstdint>

#include "headwise/kv_type.hpp"
#include "kernels/registry.hpp"

namespace headwise::kernels {

struct KvConvert {
  Isa isa;
  const char* name;
  void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);
  void (*f32_to_bf16)(const float* src, uint16_t* dst, int64_t n);
  void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  void (*bf16_to_f32)(const uint16_t* src, float* dst, int64_t n);
};

// The list (kv_convert.inc order) and its best line for `isa` (kernels/registry.hpp);
// a plan selects once, at build.
KernelList<KvConvert> kv_convert_kernels();
const KvConvert& kv_convert(Isa isa);

// dst (n elements of type t) = src rounded, with c's converters; for f32 a copy.
void store_kv(const KvConvert& c, KvType t, const float* src, void* dst, int64_t n);
// dst = src (n elements of type t) widened; for f32 a copy.
void load_kv(const KvConvert& c, KvType t, const void* src, float* dst, int64_t n);

}  // namespace headwise::kernels
