// Q8_0: blocks of 32 int8 with one f16 scale. Reference quantization (d = max|x|/127 in
// f16, q = round(x/d)), dequantization, and the scalar int8 product.
#include <algorithm>
#include <cmath>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {

void quantize_q8_0(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockQ8_0*>(out);
  for (int64_t b = 0; b < K / kQK; ++b) {
    const float* xb = x + b * kQK;
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(xb[j]));
    o[b].d = f32_to_half(amax / 127.0f);
    // Divide by the stored (f16-rounded) scale, so what is dequantized is the nearest grid point.
    const float d = half_to_f32(o[b].d), id = d > 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j)
      o[b].q[j] = int8_t(clampf(round_even(xb[j] * id), -127.0f, 127.0f));
  }
}

void dequantize_q8_0(const void* w, float* out, int64_t K) {
  const auto* b = static_cast<const BlockQ8_0*>(w);
  for (int64_t k = 0; k < K; ++k) out[k] = half_to_f32(b[k / kQK].d) * b[k / kQK].q[k % kQK];
}

namespace {
float dot_q8_0(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  float s = 0;
  for (int64_t i = 0; i < K / kQK; ++i) {
    int32_t p = 0;
    for (int j = 0; j < kQK; ++j) p += int32_t(b[i].q[j]) * a[i].q[j];
    s += half_to_f32(b[i].d) * a[i].d * float(p);
  }
  return s;
}
}  // namespace

void gemv_q8_0__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_q8_0>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q8_0__scalar =
    quant::QuantLinear<quant::WType::q8_0, WeightType::q8_0, quant::gemv_q8_0__scalar, false>::impl("q8_0");
}  // namespace headwise::kernels
