// Q6_K: super-blocks of 256 = 16 sub-blocks of 16, x = d·sc_j·(q − 32) with int8 sc_j
// and 6-bit q. Element e = 128h + 32g + l (half h, group g ∈ 0..3, l ∈ 0..31) keeps its
// low 4 bits in ql[64h + 32(g & 1) + l] (low nibble for g < 2, high for g ≥ 2) and its
// top 2 bits in bits 2g, 2g + 1 of qh[32h + l]; its scale is scales[e / 16].
// Reference quantization (symmetric scale search per sub-block, then int8 scales, then
// q against the stored scales), dequantization, and the scalar int8 product.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"
#include "kernels/quant/scale_search.hpp"

namespace headwise::kernels::quant {

namespace {
inline int q6_k_at(const BlockQ6_K& b, int e) {
  const int h = e / 128, g = (e % 128) / 32, l = e % 32;
  const uint8_t lo = b.ql[64 * h + 32 * (g & 1) + l];
  const int low = g < 2 ? (lo & 0xF) : (lo >> 4);
  return low | (((b.qh[32 * h + l] >> (2 * g)) & 3) << 4);
}
}  // namespace

void quantize_q6_k(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockQ6_K*>(out);
  for (int64_t b = 0; b < K / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    BlockQ6_K& B = o[b];
    std::memset(&B, 0, sizeof B);
    float sc[16];
    const float mx = fit_scales16_sym(xb, 32, 31, sc);
    B.d = f32_to_half(std::fabs(mx) / 127.0f);
    const float d = half_to_f32(B.d);
    for (int j = 0; j < 16; ++j) {
      const int is = d > 0 ? int(clampf(round_even(sc[j] / d), -127.0f, 127.0f)) : 0;
      B.scales[j] = int8_t(is);
      const float s = d * is;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * j + i;
        const float v = s != 0 ? round_even(xb[e] / s) : 0.0f;
        const int q = int(clampf(v, -32.0f, 31.0f)) + 32;
        const int h = e / 128, g = (e % 128) / 32, l = e % 32;
        B.ql[64 * h + 32 * (g & 1) + l] |= uint8_t(g < 2 ? (q & 0xF) : (q & 0xF) << 4);
        B.qh[32 * h + l] |= uint8_t((q >> 4) << (2 * g));
      }
    }
  }
}

void dequantize_q6_k(const void* w, float* out, int64_t K) {
  const auto* b = static_cast<const BlockQ6_K*>(w);
  for (int64_t s = 0; s < K / kQKK; ++s) {
    const float d = half_to_f32(b[s].d);
    for (int e = 0; e < kQKK; ++e)
      out[s * kQKK + e] = d * float(b[s].scales[e / 16]) * float(q6_k_at(b[s], e) - 32);
  }
}

namespace {
float dot_q6_k(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  float s = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const float d = half_to_f32(b[sb].d);
    for (int j = 0; j < 8; ++j) {  // activation block j covers elements 32j .. 32j + 31
      const BlockQ8A& x = a[sb * 8 + j];
      int32_t p[2] = {0, 0};
      for (int i = 0; i < 32; ++i) p[i / 16] += (q6_k_at(b[sb], 32 * j + i) - 32) * x.q[i];
      s += d * x.d * float(b[sb].scales[2 * j] * p[0] + b[sb].scales[2 * j + 1] * p[1]);
    }
  }
  return s;
}
}  // namespace

void gemv_q6_k__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_q6_k>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q6_k__scalar =
    quant::QuantLinear<quant::WType::q6_k, WeightType::q6_k, quant::gemv_q6_k__scalar, false>::impl("q6_K");
}  // namespace headwise::kernels
