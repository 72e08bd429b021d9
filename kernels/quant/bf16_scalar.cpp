// BF16 weights: rounding to nearest even, widening, and the scalar product against bf16
// inputs (the same operands vdpbf16ps multiplies).
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {

void quantize_bf16(const float* x, void* out, int64_t K) {
  auto* o = static_cast<uint16_t*>(out);
  for (int64_t k = 0; k < K; ++k) o[k] = f32_to_bf16(x[k]);
}

void dequantize_bf16(const void* w, float* out, int64_t K) {
  const auto* h = static_cast<const uint16_t*>(w);
  for (int64_t k = 0; k < K; ++k) out[k] = bf16_to_f32(h[k]);
}

namespace {
float dot_bf16(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* h = reinterpret_cast<const uint16_t*>(w);
  const auto* x = reinterpret_cast<const uint16_t*>(xa);
  float s = 0;
  for (int64_t k = 0; k < K; ++k) s += bf16_to_f32(h[k]) * bf16_to_f32(x[k]);
  return s;
}
}  // namespace

void gemv_bf16__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_bf16>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_bf16__scalar =
    quant::QuantLinear<quant::WType::bf16, WeightType::bf16, quant::gemv_bf16__scalar, false>::impl("bf16");
}  // namespace headwise::kernels
