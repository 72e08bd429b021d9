// The math for the scalar vocabulary (simd::Scalar). This is the portable path, and
// speed matters less here than in the vector paths, so each function is evaluated in
// double with libm and rounded once. Results are then within an ulp or so. The formulas
// are the same as in math_xsimd.hpp; each is written in the form that does not cancel in
// the tails.
#pragma once

#include <algorithm>
#include <cmath>

#include "kernels/simd/simd_scalar.hpp"

namespace headwise::kernels::simd {

template <class S>
struct Math;

template <>
struct Math<Scalar> {
  static inline float exp(float x) { return static_cast<float>(std::exp(double(x))); }

  // e^t for the 1 + e^t of the activations, with t no lower than −700: e^−700 ≈ 1e−304 is
  // a normal double and 1 + it is 1, as for any lower t, but libm's exp of t < −745
  // underflows to 0 through the subnormals (the assists math_xsimd.hpp avoids).
  static inline double exp_floor(double t) { return std::exp(std::max(t, -700.0)); }

  // silu(x) = x / (1 + e^−x)
  static inline float silu(float x) {
    const double d = x;
    return static_cast<float>(d / (1.0 + exp_floor(-d)));
  }

  // gelu_tanh(x) = ½x(1 + tanh z) = x / (1 + e^−2z),  z = √(2/π)(x + 0.044715x³).
  // (Even in double, 1 + tanh z rounds to 0 once z < −19.)
  static inline float gelu_tanh(float x) {
    const double d = x;
    const double k1 = 1.5957691216057308;  // 2√(2/π)
    const double two_z = k1 * (d + 0.044715 * d * d * d);
    return static_cast<float>(d / (1.0 + exp_floor(-two_z)));
  }

  // gelu_erf(x) = ½x(1 + erf(x/√2)) = ½x·erfc(−x/√2)
  static inline float gelu_erf(float x) {
    const double d = x;
    return static_cast<float>(0.5 * d * std::erfc(-d * 0.70710678118654752));
  }
};

}  // namespace headwise::kernels::simd
