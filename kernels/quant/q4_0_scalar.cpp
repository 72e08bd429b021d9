// Q4_0: blocks of 32 nibbles with one f16 scale, x = d·(q − 8). Reference quantization
// (the value of largest magnitude maps to −8, so the grid reaches it exactly),
// dequantization, and the scalar product against int8 inputs.
#include <algorithm>
#include <cmath>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {

void quantize_q4_0(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockQ4_0*>(out);
  for (int64_t b = 0; b < K / kQK; ++b) {
    const float* xb = x + b * kQK;
    float mx = 0;  // the signed value of largest magnitude
    for (int j = 0; j < kQK; ++j)
      if (std::fabs(xb[j]) > std::fabs(mx)) mx = xb[j];
    o[b].d = f32_to_half(mx / -8.0f);
    const float d = half_to_f32(o[b].d), id = d != 0 ? 1.0f / d : 0.0f;
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j)
      q[j] = uint8_t(clampf(round_even(xb[j] * id) + 8.0f, 0.0f, 15.0f));
    for (int j = 0; j < kQK / 2; ++j) o[b].q[j] = uint8_t(q[j] | (q[j + kQK / 2] << 4));
  }
}

namespace {
inline int q4_0_at(const BlockQ4_0& b, int j) {
  return j < kQK / 2 ? (b.q[j] & 0xF) : (b.q[j - kQK / 2] >> 4);
}
}  // namespace

void dequantize_q4_0(const void* w, float* out, int64_t K) {
  const auto* b = static_cast<const BlockQ4_0*>(w);
  for (int64_t k = 0; k < K; ++k)
    out[k] = half_to_f32(b[k / kQK].d) * float(q4_0_at(b[k / kQK], int(k % kQK)) - 8);
}

namespace {
float dot_q4_0(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ4_0*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  float s = 0;
  for (int64_t i = 0; i < K / kQK; ++i) {
    int32_t p = 0;
    for (int j = 0; j < kQK; ++j) p += (q4_0_at(b[i], j) - 8) * a[i].q[j];
    s += half_to_f32(b[i].d) * a[i].d * float(p);
  }
  return s;
}
}  // namespace

void gemv_q4_0__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_q4_0>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q4_0__scalar =
    quant::QuantLinear<quant::WType::q4_0, WeightType::q4_0, quant::gemv_q4_0__scalar, false>::impl("q4_0");
}  // namespace headwise::kernels
