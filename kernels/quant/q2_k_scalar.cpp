// Q2_K: super-blocks of 256 = 16 sub-blocks of 16, x = d·sc_j·q − dmin·m_j with 4-bit
// sc_j, m_j (the low and high nibble of scales[j]) and 2-bit q ∈ [0, 3]. Element e =
// 128h + 32k + l (half h, group k ∈ 0..3, l ∈ 0..31) keeps q in bits 2k, 2k + 1 of
// qs[32h + l] (Q3_K's low bits, without the 3rd). (GGUF's layout; llama-quantize writes
// Q2_K in its Q2_K mix, the smallest of the K-quants: 2.625 bits a weight.)
// Reference quantization (scale and min search per sub-block, scale_search.hpp, then the
// 4-bit scales and mins against d and dmin, then q against the stored ones),
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
inline int q2_k_at(const BlockQ2_K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  return (b.qs[32 * h + l] >> (2 * k)) & 3;
}
}  // namespace

void quantize_q2_k(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockQ2_K*>(out);
  for (int64_t b = 0; b < K / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    BlockQ2_K& B = o[b];
    std::memset(&B, 0, sizeof B);
    // Importance: larger values matter more, but never zero weight (rms floor), as the
    // other K-quants' (q45_k.hpp).
    double ss = 0;
    for (int i = 0; i < kQKK; ++i) ss += double(xb[i]) * xb[i];
    const float rms = float(std::sqrt(ss / kQKK));
    float w[16], sc[16], mn[16], max_sc = 0, max_mn = 0;
    for (int j = 0; j < 16; ++j) {
      for (int i = 0; i < 16; ++i) w[i] = rms + std::fabs(xb[16 * j + i]);
      fit_scale_min(xb + 16 * j, w, 16, 3, &sc[j], &mn[j]);
      max_sc = std::max(max_sc, sc[j]);
      max_mn = std::max(max_mn, mn[j]);
    }
    B.d = f32_to_half(max_sc / 15.0f);
    B.dmin = f32_to_half(max_mn / 15.0f);
    const float d = half_to_f32(B.d), dmin = half_to_f32(B.dmin);
    for (int j = 0; j < 16; ++j) {
      const int is = d > 0 ? int(std::min(15.0f, round_even(sc[j] / d))) : 0;
      const int im = dmin > 0 ? int(std::min(15.0f, round_even(mn[j] / dmin))) : 0;
      B.scales[j] = uint8_t(is | im << 4);
      const float s = d * float(is), m = dmin * float(im);
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * j + i;
        const float v = s > 0 ? round_even((xb[e] + m) / s) : 0.0f;
        const int q = int(clampf(v, 0.0f, 3.0f));
        B.qs[32 * (e / 128) + e % 32] |= uint8_t(q << (2 * ((e % 128) / 32)));
      }
    }
  }
}

void dequantize_q2_k(const void* w, float* out, int64_t K) {
  const auto* b = static_cast<const BlockQ2_K*>(w);
  for (int64_t s = 0; s < K / kQKK; ++s) {
    const float d = half_to_f32(b[s].d), dmin = half_to_f32(b[s].dmin);
    for (int e = 0; e < kQKK; ++e) {
      const uint8_t sm = b[s].scales[e / 16];
      // d·sc·q and dmin·m are exact in fp32: one rounding, as ggml's dl·q − ml
      out[s * kQKK + e] = d * float(sm & 0xF) * float(q2_k_at(b[s], e)) - dmin * float(sm >> 4);
    }
  }
}

namespace {
float dot_q2_k(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockQ2_K*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  float s = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const float d = half_to_f32(b[sb].d), dmin = half_to_f32(b[sb].dmin);
    for (int j = 0; j < 8; ++j) {  // activation block j covers sub-blocks 2j and 2j + 1
      const BlockQ8A& x = a[sb * 8 + j];
      int32_t p[2] = {0, 0};
      for (int i = 0; i < 32; ++i) p[i / 16] += q2_k_at(b[sb], 32 * j + i) * x.q[i];
      const uint8_t s0 = b[sb].scales[2 * j], s1 = b[sb].scales[2 * j + 1];
      s += d * x.d * float((s0 & 0xF) * p[0] + (s1 & 0xF) * p[1]) -
           dmin * x.d * float((s0 >> 4) * x.sum[0] + (s1 >> 4) * x.sum[1]);
    }
  }
  return s;
}
}  // namespace

void gemv_q2_k__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_q2_k>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q2_k__scalar =
    quant::QuantLinear<quant::WType::q2_k, WeightType::q2_k, quant::gemv_q2_k__scalar, false>::impl("q2_K");
}  // namespace headwise::kernels
