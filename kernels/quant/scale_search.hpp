// Scale searches for the K-quants' reference quantization (scalar, shared by the
// quantizers; not ISA code). Both minimise a weighted squared error Σ wᵢ(x̂ᵢ − xᵢ)²:
// they try a small fan of grid spacings around the obvious one (range / levels),
// round every value to each grid, refit scale (and offset) by weighted least squares
// for that rounding, and keep the fit whose error (computed from the same sums) is
// least. The caller then rounds against the stored scales. Plain max-based scaling wastes levels
// on one outlier; the fan plus refit recovers most of that (measured in quant_test).
#pragma once

#include <algorithm>
#include <cmath>

namespace headwise::kernels::quant {
namespace {

constexpr int kFanSteps = 4;        // candidates at nmax ± kFanDelta·t, t ∈ [−4, 4]: ±1 level
constexpr float kFanDelta = 0.25f;  // (a finer fan of 21 measured no better on Gaussian rows)

// x ≈ scale·q − min with q ∈ [0, nmax], scale ≥ 0, min ≥ 0 (the offset never
// exceeds zero: ggml's K-quants store a non-negative min). Returns the error.
inline double fit_scale_min(const float* x, const float* w, int n, int nmax, float* scale, float* min) {
  float lo = 0, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *scale = 0;
  *min = -lo;
  if (!(hi > lo)) return 0;
  double sxx = 0, sw = 0, sx = 0;
  for (int i = 0; i < n; ++i) {
    sw += w[i];
    sx += double(w[i]) * x[i];
    sxx += double(w[i]) * x[i] * x[i];
  }
  double best = INFINITY;
  for (int t = -kFanSteps; t <= kFanSteps; ++t) {
    const float iscale = (nmax + kFanDelta * t) / (hi - lo);
    float sq = 0, sqq = 0, sqx = 0;  // ≤ 32 terms each: float is plenty
    for (int i = 0; i < n; ++i) {
      const float q = clampf(round_even(iscale * (x[i] - lo)), 0.0f, float(nmax));
      sq += w[i] * q;
      sqq += w[i] * q * q;
      sqx += w[i] * q * x[i];
    }
    // Weighted least squares for x ≈ s·q + b; b > 0 is not storable: then b = 0.
    const double det = sw * sqq - sq * sq;
    if (!(det > 0)) continue;
    double s = (sw * sqx - sq * sx) / det, b = (sqq * sx - sq * sqx) / det;
    if (b > 0) {
      b = 0;
      s = sqx / sqq;
    }
    if (!(s > 0)) continue;
    // Σ w(s·q + b − x)², expanded over the sums already at hand (no second pass).
    const double err = sxx - 2 * s * sqx - 2 * b * sx + s * s * sqq + 2 * s * b * sq + b * b * sw;
    if (err < best) {
      best = err;
      *scale = float(s);
      *min = float(-b);
    }
  }
  if (best == INFINITY) {  // degenerate weights: fall back to the range
    *scale = (hi - lo) / nmax;
    *min = -lo;
  }
  return best;
}

// x ≈ scale·q with q ∈ [−nneg, npos] (scale may be negative, so the value of largest
// magnitude can take the longer side of the grid).
inline double fit_scale_sym(const float* x, const float* w, int n, int nneg, int npos, float* scale) {
  float mx = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(mx)) mx = x[i];
  *scale = 0;
  if (mx == 0) return 0;
  double sxx = 0;
  for (int i = 0; i < n; ++i) sxx += double(w[i]) * x[i] * x[i];
  double best = INFINITY;
  for (int side = 0; side < 2; ++side) {
    const float levels = side == 0 ? -float(nneg) : float(npos);
    for (int t = -kFanSteps; t <= kFanSteps; ++t) {
      const float iscale = (levels + (levels < 0 ? -1 : 1) * kFanDelta * t) / mx;
      float sqq = 0, sqx = 0;
      for (int i = 0; i < n; ++i) {
        const float q = clampf(round_even(iscale * x[i]), -float(nneg), float(npos));
        sqq += w[i] * q * q;
        sqx += w[i] * q * x[i];
      }
      if (!(sqq > 0)) continue;
      const float s = float(sqx / sqq);
      if (s == 0) continue;
      // Σ w(s·q − x)² at the least-squares s: Σwx² − (Σwqx)²/Σwq².
      const double err = sxx - sqx * sqx / sqq;
      if (err < best) {
        best = err;
        *scale = s;
      }
    }
  }
  if (best == INFINITY) *scale = mx / -float(nneg);
  return best;
}

// The 16 sub-block scales (sc[16]) of a super-block of 256 values, each fitted by
// fit_scale_sym with levels [−nneg, npos] under importance x² with a floor (the large
// values dominate a dot product's error); returns the scale of largest magnitude
// (Q3_K's and Q6_K's quantizers).
inline float fit_scales16_sym(const float* xb, int nneg, int npos, float* sc) {
  double ss = 0;
  for (int i = 0; i < 256; ++i) ss += double(xb[i]) * xb[i];
  const float floor = float(ss / 256) * 1e-2f;
  float w[256];
  for (int i = 0; i < 256; ++i) w[i] = floor + xb[i] * xb[i];
  float mx = 0;
  for (int j = 0; j < 16; ++j) {
    fit_scale_sym(xb + 16 * j, w + 16 * j, 16, nneg, npos, &sc[j]);
    if (std::fabs(sc[j]) > std::fabs(mx)) mx = sc[j];
  }
  return mx;
}

}  // namespace
}  // namespace headwise::kernels::quant
