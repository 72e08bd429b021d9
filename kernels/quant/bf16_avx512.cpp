// BF16 products on avx512: AVX512-BF16 vdpbf16ps multiplies 32 bf16 pairs into 16 fp32
// sums per instruction; the tail is a masked load (zeros add nothing).
// The rows are asked for 8 KiB ahead with one non-temporal prefetch a line (dot_x86.hpp's
// ahead_nta, which the Q8_0 and Q4_0 panels used until session 18) rather than ahead()'s
// L1 + L2 pair: on the
// Zen 5 host, 2 threads, each call from DRAM (6 copies in turn), 768 × 32000 rows went
// 46-49 → 51-52 GB/s and 2048 × 8192 45-53 → 54-57 (probe 50-55, 3-4 alternations), and
// llama-134m BF16 decode (headwise bench, P512) 186-194 → 205-212 tok/s.
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
    ahead_nta(h + k);
    ahead_nta(h + k + 32);
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
