// IQ4_XS: super-blocks of 256 = 8 sub-blocks of 32, x = d·sc_j·kIq4Values[q] with 6-bit
// signed scales sc_j ∈ [−32, 31] (blocks.hpp, iq4_xs_scale) and 4-bit indices q into a
// non-uniform grid of 16 int8 levels. (GGUF's layout; llama-quantize writes IQ4_XS in its
// IQ4_XS mix, and IQ4_NL, the same grid in blocks of 32, where a row is not whole
// 256-blocks.)
// Reference quantization (a weighted least-squares scale search per sub-block over the
// grid, then the 6-bit scales against a super-block d, then q against the stored
// scales), dequantization, and the scalar int8 product.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {

namespace {
// The index of the level nearest v (the lower on a tie). The midpoints between levels are
// multiples of 1/2, so c = ⌈2v⌉ decides: v ≤ a midpoint m exactly when c ≤ 2m. One table
// lookup (the quantizer's inner loop: a binary search made convert 4× slower).
struct NearestLevel {
  static constexpr int kLo = 2 * -127, kHi = 2 * 113;  // c beyond these clamps to the end levels
  uint8_t at[kHi - kLo + 1];
  NearestLevel() {
    for (int c = kLo; c <= kHi; ++c) {
      int l = 0;
      while (l < 15 && c > kIq4Values[l] + kIq4Values[l + 1]) ++l;  // v above the midpoint of l, l + 1
      at[c - kLo] = uint8_t(l);
    }
  }
};
const NearestLevel kNearest;
inline int nearest_level(float v) {
  const float w = 2.0f * clampf(v, -128.0f, 114.0f);
  int c = int(w);  // toward zero, then up to the ceiling
  c += float(c) < w;
  return kNearest.at[std::min(std::max(c, NearestLevel::kLo), NearestLevel::kHi) - NearestLevel::kLo];
}
inline int nibble_at(const BlockIQ4_XS& b, int e) {
  const int j = e / 32, l = e % 32;
  return l < 16 ? b.q[16 * j + l] & 0xF : b.q[16 * j + l - 16] >> 4;
}

// The scale s of 32 values that best fits x ≈ s·kIq4Values[q] in the least squares
// weighted by x² (the large values matter most): the grid's ends against the largest
// magnitude and 14 steps around it, each with its optimal s for the levels it picks.
float fit_iq4_scale(const float* x) {
  float amax = 0, max = 0;
  for (int i = 0; i < 32; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  if (amax < 1e-15f) return 0.0f;
  float best_s = 0, best = -1;
  for (int t = -7; t <= 7; ++t) {
    const float inv = (float(kIq4Values[0]) + float(t)) / max;  // max maps near level 0 (−127)
    double sqx = 0, sqq = 0;
    for (int i = 0; i < 32; ++i) {
      const float q = kIq4Values[nearest_level(inv * x[i])];
      const double w = double(x[i]) * x[i];
      sqx += w * q * x[i];
      sqq += w * q * q;
    }
    // The optimal s for these levels is sqx / sqq; its error falls as sqx² / sqq grows.
    if (sqq > 0 && sqx * sqx / sqq > best) best = float(sqx * sqx / sqq), best_s = float(sqx / sqq);
  }
  return best_s;
}
}  // namespace

void quantize_iq4_xs(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockIQ4_XS*>(out);
  for (int64_t b = 0; b < K / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    BlockIQ4_XS& B = o[b];
    std::memset(&B, 0, sizeof B);
    float sc[8], mx = 0;
    for (int j = 0; j < 8; ++j) {
      sc[j] = fit_iq4_scale(xb + 32 * j);
      if (std::fabs(sc[j]) > std::fabs(mx)) mx = sc[j];
    }
    // The largest scale takes level −32, the longer side of [−32, 31].
    B.d = f32_to_half(-mx / 32.0f);
    const float d = half_to_f32(B.d);
    for (int j = 0; j < 8; ++j) {
      const int is = d != 0 ? int(clampf(round_even(sc[j] / d), -32.0f, 31.0f)) : 0;
      const int u = is + 32;
      B.scales_l[j / 2] |= uint8_t((u & 0xF) << (4 * (j % 2)));
      B.scales_h |= uint16_t((u >> 4) << (2 * j));
      const float s = d * float(is);
      for (int l = 0; l < 32; ++l) {
        const int q = s != 0 ? nearest_level(xb[32 * j + l] / s) : 8;  // level 8 is 1: the nearest to 0
        B.q[16 * j + l % 16] |= uint8_t(q << (l < 16 ? 0 : 4));
      }
    }
  }
}

void dequantize_iq4_xs(const void* w, float* out, int64_t K) {
  const auto* b = static_cast<const BlockIQ4_XS*>(w);
  for (int64_t s = 0; s < K / kQKK; ++s) {
    const float d = half_to_f32(b[s].d);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * float(iq4_xs_scale(b[s], j));  // exact: an f16 times a 6-bit integer
      for (int l = 0; l < 32; ++l) out[s * kQKK + 32 * j + l] = dl * float(kIq4Values[nibble_at(b[s], 32 * j + l)]);
    }
  }
}

namespace {
float dot_iq4_xs(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const BlockIQ4_XS*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  float s = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const float d = half_to_f32(b[sb].d);
    for (int j = 0; j < 8; ++j) {  // activation block j is sub-block j
      const BlockQ8A& x = a[sb * 8 + j];
      int32_t p = 0;
      for (int l = 0; l < 32; ++l) p += kIq4Values[nibble_at(b[sb], 32 * j + l)] * x.q[l];
      s += d * x.d * float(iq4_xs_scale(b[sb], j) * p);
    }
  }
  return s;
}
}  // namespace

void gemv_iq4_xs__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                         int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_iq4_xs>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_iq4_xs__scalar =
    quant::QuantLinear<quant::WType::iq4_xs, WeightType::iq4_xs, quant::gemv_iq4_xs__scalar, false>::impl("iq4_XS");
}  // namespace headwise::kernels
