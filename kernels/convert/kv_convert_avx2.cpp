// avx2 instantiation of the KV-cache conversions (kv_convert_impl.hpp).
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/convert/kv_convert_impl.hpp"

namespace headwise::kernels {
namespace {
using Body = KvConvertBody<simd::F32<xsimd::fma3<xsimd::avx2>>>;
}  // namespace

void kv_convert__avx2_f32_to_f16(const float* s, uint16_t* d, int64_t n) { Body::to_f16(s, d, n); }
void kv_convert__avx2_f32_to_bf16(const float* s, uint16_t* d, int64_t n) { Body::to_bf16(s, d, n); }
void kv_convert__avx2_f16_to_f32(const uint16_t* s, float* d, int64_t n) {
  Body::widen_rows<KvF16>(s, d, n);
}
void kv_convert__avx2_bf16_to_f32(const uint16_t* s, float* d, int64_t n) {
  Body::widen_rows<KvBf16>(s, d, n);
}

}  // namespace headwise::kernels
