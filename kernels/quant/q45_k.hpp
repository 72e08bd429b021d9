// The scalar code shared by Q4_K and Q5_K (reference quantization, dequantization and
// the scalar product; not ISA code): both store a super-block of 256 = 8 sub-blocks of
// 32 as x ≈ d·sc_j·q − dmin·m_j with f16 d, dmin and 6-bit sc_j, m_j packed alike
// (ggml's 12 bytes, read by k_scale_min); they differ only in the number of levels
// (Q4_K q ∈ [0, 15], Q5_K [0, 31]) and in how the levels are packed (q4_k_scalar.cpp,
// q5_k_scalar.cpp: the packing, and At(block, i), level i ∈ [0, 256) of a block).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/scale_search.hpp"

namespace headwise::kernels::quant {
namespace {

// One super-block xb[256]: the scale search per sub-block (scale_search.hpp), then d,
// dmin and the 6-bit scales into *d, *dmin and scales[12], then the levels q[256]
// ∈ [0, nmax], one per byte, against the scales as stored (what dequantization uses).
inline void quantize_k_scale_min(const float* xb, int nmax, uint16_t* d_out, uint16_t* dmin_out,
                                 uint8_t* scales, uint8_t* q) {
  std::memset(scales, 0, 12);
  // Importance: larger values matter more, but never zero weight (rms floor).
  double ss = 0;
  for (int i = 0; i < kQKK; ++i) ss += double(xb[i]) * xb[i];
  const float rms = float(std::sqrt(ss / kQKK));
  float w[kQKK];
  for (int i = 0; i < kQKK; ++i) w[i] = rms + std::fabs(xb[i]);
  float sc[8], mn[8], max_sc = 0, max_mn = 0;
  for (int j = 0; j < 8; ++j) {
    fit_scale_min(xb + 32 * j, w + 32 * j, 32, nmax, &sc[j], &mn[j]);
    max_sc = std::max(max_sc, sc[j]);
    max_mn = std::max(max_mn, mn[j]);
  }
  *d_out = f32_to_half(max_sc / 63.0f);
  *dmin_out = f32_to_half(max_mn / 63.0f);
  const float d = half_to_f32(*d_out), dmin = half_to_f32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    const int is = d > 0 ? int(std::min(63.0f, round_even(sc[j] / d))) : 0;
    const int im = dmin > 0 ? int(std::min(63.0f, round_even(mn[j] / dmin))) : 0;
    if (j < 4) {
      scales[j] = uint8_t(is);
      scales[j + 4] = uint8_t(im);
    } else {
      scales[j + 4] = uint8_t((is & 0xF) | ((im & 0xF) << 4));
      scales[j - 4] |= uint8_t((is >> 4) << 6);
      scales[j] |= uint8_t((im >> 4) << 6);
    }
    const float s = d * is, m = dmin * im;
    for (int i = 0; i < 32; ++i) {
      const float v = s > 0 ? round_even((xb[32 * j + i] + m) / s) : 0.0f;
      q[32 * j + i] = uint8_t(clampf(v, 0.0f, float(nmax)));
    }
  }
}

// Dequantization of K elements of blocks B, level i of a block read by At.
template <class B, int (*At)(const B&, int)>
void dequantize_k_scale_min(const void* w, float* out, int64_t K) {
  const auto* b = static_cast<const B*>(w);
  for (int64_t s = 0; s < K / kQKK; ++s) {
    const float d = half_to_f32(b[s].d), dmin = half_to_f32(b[s].dmin);
    for (int i = 0; i < kQKK; ++i) {
      int sc, m;
      k_scale_min(b[s].scales, i / 32, &sc, &m);
      out[s * kQKK + i] = d * float(sc) * float(At(b[s], i)) - dmin * float(m);
    }
  }
}

// Row · prepared int8 input (BlockQ8A): per sub-block j, d·sc_j·x.d·Σ q·x − dmin·m_j·x.d·Σx.
template <class B, int (*At)(const B&, int)>
float dot_k_scale_min(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* b = reinterpret_cast<const B*>(w);
  const auto* a = reinterpret_cast<const BlockQ8A*>(xa);
  float s = 0;
  for (int64_t sb = 0; sb < K / kQKK; ++sb) {
    const float d = half_to_f32(b[sb].d), dmin = half_to_f32(b[sb].dmin);
    for (int j = 0; j < 8; ++j) {
      const BlockQ8A& x = a[sb * 8 + j];
      int sc, m;
      k_scale_min(b[sb].scales, j, &sc, &m);
      int32_t p = 0;
      for (int i = 0; i < 32; ++i) p += At(b[sb], 32 * j + i) * x.q[i];
      s += d * float(sc) * x.d * float(p) - dmin * float(m) * x.d * float(x.sum[0] + x.sum[1]);
    }
  }
  return s;
}

}  // namespace
}  // namespace headwise::kernels::quant
