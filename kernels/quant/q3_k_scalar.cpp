// Q3_K: super-blocks of 256 = 16 sub-blocks of 16, x = d·sc_j·(q − 4) with 6-bit
// signed scales sc_j ∈ [−32, 31] (blocks.hpp, q3_k_scale) and 3-bit q ∈ [0, 7].
// Element e = 128h + 32k + l (half h, group k ∈ 0..3, l ∈ 0..31) keeps its low 2 bits in
// bits 2k, 2k + 1 of qs[32h + l] and its 3rd bit in bit 4h + k of hmask[l]; its scale is
// sub-block e / 16's. (GGUF's layout; llama-quantize writes Q3_K in its Q3_K_S/M/L mixes
// and Q2_K's.)
// Reference quantization (symmetric scale search per sub-block with levels −4..3, then
// the 6-bit scales against a super-block d, then q against the stored scales),
// dequantization, and the scalar int8 product.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"
#include "kernels/quant/scale_search.hpp"

namespace headwise::kernels::quant {

namespace {
inline int q3_k_at(const BlockQ3_K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  return ((b.qs[32 * h + l] >> (2 * k)) & 3) | (((b.hmask[l] >> (4 * h + k)) & 1) << 2);
}
}  // namespace

void quantize_q3_k(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockQ3_K*>(out);
  for (int64_t b = 0; b < K / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    BlockQ3_K& B = o[b];
    std::memset(&B, 0, sizeof B);
    float sc[16];
    const float mx = fit_scales16_sym(xb, 4, 3, sc);
    // The largest scale takes level −32, the longer side of [−32, 31].
    B.d = f32_to_half(-mx / 32.0f);
    const float d = half_to_f32(B.d);
    for (int j = 0; j < 16; ++j) {
      const int is = d != 0 ? int(clampf(round_even(sc[j] / d), -32.0f, 31.0f)) : 0;
      const int u = is + 32;
      B.scales[j % 8] |= uint8_t((u & 0xF) << (j < 8 ? 0 : 4));
      B.scales[8 + j % 4] |= uint8_t((u >> 4) << (2 * (j / 4)));
      const float s = d * float(is);
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * j + i;
        const float v = s != 0 ? round_even(xb[e] / s) : 0.0f;
        const int q = int(clampf(v, -4.0f, 3.0f)) + 4;
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        B.qs[32 * h + l] |= uint8_t((q & 3) << (2 * k));
        B.hmask[l] |= uint8_t((q >> 2) << (4 * h + k));
      }
    }
  }
}

void dequantize_q3_k(const void* w, float* out, int64_t K) {
  const auto* b = static_cast<const BlockQ3_K*>(w);
  for (int64_t s = 0; s < K / kQKK; ++s) {
    const float d = half_to_f32(b[s].d);
    for (int e = 0; e < kQKK; ++e)
      out[s * kQKK + e] = d * float(q3_k_scale(b[s].scales, e / 16)) * float(q3_k_at(b[s], e) - 4);
  }
}

namespace {
float dot_q3_k(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ3_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  float s = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const float d = half_to_f32(b[sb].d);
    for (int j = 0; j < 8; ++j) {  // activation block j covers elements 32j .. 32j + 31
      const BlockQ8A& x = a[sb * 8 + j];
      int32_t p[2] = {0, 0};
      for (int i = 0; i < 32; ++i) p[i / 16] += (q3_k_at(b[sb], 32 * j + i) - 4) * x.q[i];
      s += d * x.d *
           float(q3_k_scale(b[sb].scales, 2 * j) * p[0] + q3_k_scale(b[sb].scales, 2 * j + 1) * p[1]);
    }
  }
  return s;
}
}  // namespace

void gemv_q3_k__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_q3_k>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q3_k__scalar =
    quant::QuantLinear<quant::WType::q3_k, WeightType::q3_k, quant::gemv_q3_k__scalar, false>::impl("q3_K");
}  // namespace headwise::kernels
