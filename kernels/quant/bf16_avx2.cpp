// BF16 products on avx2: bf16 → fp32 is a 16-bit shift (exact), then FMA; the inputs
// are the same bf16-rounded values vdpbf16ps multiplies on avx512.
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {
namespace {
inline __m256 widen(const uint16_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
float dot_bf16(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* h = reinterpret_cast<const uint16_t*>(w);
  const auto* x = reinterpret_cast<const uint16_t*>(xa);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    ahead(h + k);
    acc0 = _mm256_fmadd_ps(widen(h + k), widen(x + k), acc0);
    acc1 = _mm256_fmadd_ps(widen(h + k + 8), widen(x + k + 8), acc1);
  }
  float s = hsum8(_mm256_add_ps(acc0, acc1));
  for (; k < K; ++k) s += bf16_to_f32(h[k]) * bf16_to_f32(x[k]);
  return s;
}
}  // namespace

void gemv_bf16__avx2(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                     int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_bf16>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_bf16__avx2 =
    quant::QuantLinear<quant::WType::bf16, WeightType::bf16, quant::gemv_bf16__avx2, false, quant::prepare_x86>::impl("bf16");
}  // namespace headwise::kernels
