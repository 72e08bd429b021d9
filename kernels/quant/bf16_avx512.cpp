// BF16 products on avx512: AVX512-BF16 vdpbf16ps multiplies 32 bf16 pairs into 16 fp32
// sums per instruction; the tail is a masked load (zeros add nothing).
// The rows are asked for ahead with dot_x86.hpp's ahead() (its note says why, and what it
// replaced).
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {
namespace {
inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh&>(v); }
float dot_bf16(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* h = reinterpret_cast<const uint16_t*>(w);
  const auto* x = reinterpret_cast<const uint16_t*>(xa);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 64 <= K; k += 64) {
    ahead(h + k);
    ahead(h + k + 32);
    acc0 = _mm512_dpbf16_ps(acc0, as_bh(_mm512_loadu_si512(h + k)), as_bh(_mm512_loadu_si512(x + k)));
    acc1 = _mm512_dpbf16_ps(acc1, as_bh(_mm512_loadu_si512(h + k + 32)), as_bh(_mm512_loadu_si512(x + k + 32)));
  }
  for (; k < K; k += 32) {
    const __mmask32 m = K - k >= 32 ? ~__mmask32(0) : __mmask32((1u << (K - k)) - 1);
    acc0 = _mm512_dpbf16_ps(acc0, as_bh(_mm512_maskz_loadu_epi16(m, h + k)), as_bh(_mm512_maskz_loadu_epi16(m, x + k)));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
}  // namespace

void gemv_bf16__avx512(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_bf16>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_bf16__avx512 =
    quant::QuantLinear<quant::WType::bf16, WeightType::bf16, quant::gemv_bf16__avx512, true, quant::prepare_x86>::impl("bf16");
}  // namespace headwise::kernels
