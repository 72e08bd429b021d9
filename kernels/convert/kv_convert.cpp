// The KV-cache converter list (kv_convert.inc) and the type switch (ISA-agnostic).
#include "kernels/convert/kv_convert.hpp"

#include <cstring>

namespace headwise::kernels {

#define HW_KV_CONVERT(isa, prefix)                                   \
  void prefix##_f32_to_f16(const float*, uint16_t*, int64_t);       \
  void prefix##_f32_to_bf16(const float*, uint16_t*, int64_t);      \
  void prefix##_f16_to_f32(const uint16_t*, float*, int64_t);       \
  void prefix##_bf16_to_f32(const uint16_t*, float*, int64_t);
#include "kernels/convert/kv_convert.inc"
#undef HW_KV_CONVERT

namespace {
const KvConvert kTable[] = {
#define HW_KV_CONVERT(isa, prefix)                                                  \
  {Isa::isa, #prefix, prefix##_f32_to_f16, prefix##_f32_to_bf16, prefix##_f16_to_f32, \
   prefix##_bf16_to_f32},
#include "kernels/convert/kv_convert.inc"
#undef HW_KV_CONVERT
};
}  // namespace

KernelList<KvConvert> kv_convert_kernels() { return kernel_list(kTable); }

const KvConvert& kv_convert(Isa isa) {
  const KvConvert* c = select(kv_convert_kernels(), isa);
  return c ? *c : kTable[sizeof(kTable) / sizeof(kTable[0]) - 1];  // the list ends with scalar
}

void store_kv(const KvConvert& c, KvType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case KvType::f32: std::memcpy(dst, src, size_t(n) * sizeof(float)); return;
    case KvType::f16: return c.f32_to_f16(src, static_cast<uint16_t*>(dst), n);
    case KvType::bf16: return c.f32_to_bf16(src, static_cast<uint16_t*>(dst), n);
  }
}

void load_kv(const KvConvert& c, KvType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case KvType::f32: std::memcpy(dst, src, size_t(n) * sizeof(float)); return;
    case KvType::f16: return c.f16_to_f32(static_cast<const uint16_t*>(src), dst, n);
    case KvType::bf16: return c.bf16_to_f32(static_cast<const uint16_t*>(src), dst, n);
  }
}

}  // namespace headwise::kernels
