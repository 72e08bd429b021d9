// F16 products on avx512: vcvtph2ps widens 16 weights at once, FMA against fp32
// inputs; the tail is a masked load.
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {
namespace {
float dot_f16(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* h = reinterpret_cast<const uint16_t*>(w);
  const auto* x = reinterpret_cast<const float*>(xa);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    ahead(h + k);
    acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(load32(h + k)), _mm512_loadu_ps(x + k), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtph_ps(load32(h + k + 16)), _mm512_loadu_ps(x + k + 16), acc1);
  }
  for (; k < K; k += 16) {
    const __mmask16 m = K - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (K - k)) - 1);
    acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + k)), _mm512_maskz_loadu_ps(m, x + k), acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
}  // namespace

void gemv_f16__avx512(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                      int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_f16>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_f16__avx512 =
    quant::QuantLinear<quant::WType::f16, WeightType::f16, quant::gemv_f16__avx512, true>::impl("f16");
}  // namespace headwise::kernels
