// F16 products on avx2: F16C widens 8 weights per vcvtph2ps, FMA against fp32 inputs.
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {
namespace {
float dot_f16(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* h = reinterpret_cast<const uint16_t*>(w);
  const auto* x = reinterpret_cast<const float*>(xa);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    ahead(h + k);
    acc0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + k))),
                           _mm256_loadu_ps(x + k), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + k + 8))),
                           _mm256_loadu_ps(x + k + 8), acc1);
  }
  float s = hsum8(_mm256_add_ps(acc0, acc1));
  for (; k < K; ++k) s += h2f(h[k]) * x[k];
  return s;
}
}  // namespace

void gemv_f16__avx2(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                    int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_f16>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_f16__avx2 =
    quant::QuantLinear<quant::WType::f16, WeightType::f16, quant::gemv_f16__avx2, false>::impl("f16");
}  // namespace headwise::kernels
