// Q5_K products on avx512: int8 dot products with AVX512-VNNI vpdpbusd; one weight row at a
// time for one input row, register tiles for more (q5_k_x86.hpp); and rows dequantized
// to bf16 for prefill's bf16 GEMM.
#include "kernels/quant/q5_k_x86.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {

void gemv_q5_k__avx512(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  if (M == 1) gemv_rows<dot_q5_k<DpbusdVnni>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
  else gemm_tiled<TQ5_K<DpbusdVnni>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

void dequant_bf16_q5_k__avx512(const void* w, size_t rb, int64_t n0, int64_t n1, int64_t K, uint16_t* out,
                               int64_t ldo) {
  dequant_rows_bf16<TQ5_K<DpbusdVnni>>(w, rb, n0, n1, K, out, ldo);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q5_k__avx512 =
    quant::QuantLinear<quant::WType::q5_k, WeightType::q5_k, quant::gemv_q5_k__avx512, true>::impl("q5_K");
}  // namespace headwise::kernels
