// Vector transcendental functions for one xsimd architecture, and the activations
// built from them. They are accurate to a few ulp, about 5e-7 relative, over the whole
// float range. Large finite inputs saturate the way the functions do (silu(−1e30) = −0,
// gelu(1e30) = 1e30) and never give NaN or inf. A NaN input gives NaN.
//
// The same inclusion rule applies as for simd_xsimd.hpp: include this only from the
// *_avx512.cpp / *_avx2.cpp translation unit of that architecture.
#pragma once

#include <type_traits>

#include "kernels/simd/simd_xsimd.hpp"

namespace headwise::kernels::simd {

// Math<S>: the math for the vector vocabulary S (this file: F32<Arch>; math_scalar.hpp:
// Scalar).
template <class S>
struct Math;

template <class Arch>
struct Math<F32<Arch>> {
  using V = typename F32<Arch>::V;
  using I = typename F32<Arch>::I;

  // a·b + c with one rounding. xsimd 8.1 has no AVX-512 fma kernel: there xsimd::fma is
  // the generic a*b + c, which GCC may or may not fuse (it does not when a*b is also
  // computed elsewhere, as in the error terms fma(a, b, −a*b) below). So this calls the
  // intrinsic directly.
  static inline V fmadd(V a, V b, V c) {
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) return V(_mm512_fmadd_ps(a, b, c));
#endif
    return xsimd::fma(a, b, c);
  }

  // Returns v unchanged, but the compiler must treat it as a new value. GCC's default for
  // C++ is -ffp-contract=fast, so it would fuse `hi = a*b; hi + c` into one fma. The
  // error-free sums below need hi to be rounded exactly as it is stored.
  static inline V rounded(V v) {
    typename V::register_type r = v;
    asm("" : "+v"(r));
    return V(r);
  }

  // e^x · 2^Scale. Relative error ≤ 2 ulp. With Scale 0: results overflow to +inf above
  // ln(FLT_MAX) ≈ 88.72 and underflow gradually through the subnormals to 0 below about
  // −103.9. NaN stays NaN.
  // Cephes expf: e^x = 2^n · e^r, with n = round(x·log2 e) and r = x − n·ln2 ∈ [−½ln2, ½ln2].
  // ln2 = C1 + C2 (Cody–Waite). C1 has 9 significant bits, so n·C1 is exact.
  //   e^r = 1 + r + r²·P(r)
  // 2^n is applied as 2^m · 2^(n−m+Scale) with m = n >> 1. Both factors are then normal
  // floats for n ∈ [−150, 128] with Scale 0 (every subnormal result and the overflow to
  // inf), and for n ∈ [−150, 0] with Scale ≤ 64: there e^x·2^64 is a normal float for every
  // x ≤ 0 down to the clamp at −104 (see over_one_plus_exp).
  template <int Scale = 0>
  static inline V exp(V x) {
    // max/min(bound, x) return x when x is NaN.
    const V xc = xsimd::min(V(89.0f), xsimd::max(V(-104.0f), x));
    const V n = xsimd::nearbyint(xc * V(1.44269504088896341f));
    V r = fmadd(n, V(-0.693359375f), xc);
    r = fmadd(n, V(2.12194440e-4f), r);
    V p = V(1.9875691500e-4f);
    p = fmadd(p, r, V(1.3981999507e-3f));
    p = fmadd(p, r, V(8.3334519073e-3f));
    p = fmadd(p, r, V(4.1665795894e-2f));
    p = fmadd(p, r, V(1.6666665459e-1f));
    p = fmadd(p, r, V(5.0000001201e-1f));
    const V er = fmadd(r * r, p, r) + V(1.0f);
    const I ni = xsimd::to_int(n);
    const I m = ni >> 1;
    const V two_m = xsimd::bitwise_cast<V>((m + I(127)) << 23);
    const V two_nm = xsimd::bitwise_cast<V>((ni - m + I(127 + Scale)) << 23);
    return er * two_m * two_nm;
  }

  // x / (1 + e^t) = x·σ(−t), with t = th + tl given in two parts (tl ≪ th). This is built
  // from e = e^(−|t|), which cannot overflow:
  //   t ≤ 0: x / (1 + e)      t > 0: x·e / (1 + e)
  // The direct x / (1 + e^t) would give 0 for t > 88.7, where x·e^−t is still a normal
  // float. e^(−|t|) = e^(−|th|) · (1 ∓ tl), to first order in tl.
  //
  // No intermediate is subnormal unless the result is: e itself is one for |t| > 87.3, and
  // an instruction that makes or reads a subnormal costs a microcode assist (~150 cycles
  // on Intel; 8.6 against 1.2 ns an element for a swiglu over N(0, 100) inputs, and a
  // third of a gated FFN's time on a random-weight model's large gate values). So e is
  // held as es = e·2^64 (normal down to the clamp, exact scaling), the t > 0 branch forms
  // (x·es / (1 + e))·2^−64 — one exact scaling more, rounding only where the result is
  // itself subnormal — and 1 + e takes e no smaller than 2^−104 (1 + e = 1 below 2^−24
  // anyway). Past the clamp (|th| ≥ 104, where e < half the smallest subnormal) es is 0.
  static inline V over_one_plus_exp(V x, V th, V tl) {
    const auto pos = th > V(0.0f);
    const V a = xsimd::abs(th);
    const V es0 = xsimd::select(a >= V(104.0f), V(0.0f), exp<64>(-a));
    const V es = es0 * (V(1.0f) - xsimd::select(pos, tl, -tl));
    const V d = V(1.0f) + xsimd::max(es, V(0x1p-40f)) * V(0x1p-64f);
    return xsimd::select(pos, x * es, x) / d * xsimd::select(pos, V(0x1p-64f), V(1.0f));
  }

  // silu(x) = x·σ(x) = x / (1 + e^−x)
  static inline V silu(V x) { return over_one_plus_exp(x, -x, V(0.0f)); }

  // gelu_tanh(x) = ½x(1 + tanh z) with z = √(2/π)(x + 0.044715x³).
  // We use the identity ½(1 + tanh z) = σ(2z):
  //   gelu_tanh(x) = x / (1 + e^t),   t = −2z = −x(k1 + k3x²),  k1 = 2√(2/π), k3 = 0.044715·k1
  // This form has no 1 + tanh z that cancels for negative x. There, however, the result is
  // about x·e^−t, so its relative error is |t| (up to ~88) times the absolute error in t.
  // t is therefore built in float-float (hi + lo, about 2^−45 relative) from exact products
  // and a two-sum, and over_one_plus_exp takes it in its two parts.
  static inline V gelu_tanh(V x) {
    // For |x| ≥ 16, |t| > 340, so e^t is already 0 or inf. The clamp keeps x³ finite.
    const V xc = xsimd::min(V(16.0f), xsimd::max(V(-16.0f), x));
    const V k1h = V(0x1.988454p+0f), k1l = V(-0x1.857936p-25f);  // k1 = k1h + k1l
    const V k3h = V(0x1.2444f2p-4f), k3l = V(0x1.49b16ap-29f);   // k3 = k3h + k3l
    // x² = s + sl and k3h·s = p + pl, both exactly (fma gives the rounding error).
    const V s = rounded(xc * xc);
    const V sl = fmadd(xc, xc, -s);
    const V p = rounded(k3h * s);
    const V pl = fmadd(k3h, s, -p);
    // u = k1 + k3x² = uh + ul: Knuth's two-sum of k1h + p, plus the small terms.
    const V uh = k1h + p;
    const V bv = uh - k1h;
    const V two_sum_err = (k1h - (uh - bv)) + (p - bv);
    const V ul = two_sum_err + (pl + fmadd(k3h, sl, fmadd(k3l, s, k1l)));
    // −t = x·u = xh + xl, so t = th + tl with th = −xh, tl = −xl. |tl| < 2^−17, so the
    // tl²/2 that e^tl ≈ 1 + tl drops is below a float ulp.
    const V xh = rounded(xc * uh);
    const V xl = fmadd(xc, uh, -xh) + xc * ul;
    return over_one_plus_exp(x, -xh, -xl);
  }

  // gelu_erf(x) = ½x(1 + erf(x/√2)) = x·Φ(x).
  // Φ(x) = h for x < 0 and 1 − h for x ≥ 0, with h = ½·erfc(a) and a = |x|/√2.
  //   erfc(a) = e^(−a²) · (1 + P(q)) / (1 + 2a),   q = (a − 2)/(a + 2) ∈ [−1, 0.67]
  // P is a degree-9 polynomial. We fitted it here (weighted least squares with Lawson's
  // iteration, float64, a ∈ [0, 10.3]) to (1 + 2a)·e^(a²)·erfc(a) − 1. Its relative error
  // after rounding the coefficients to float is 3e-8. N. Juffa's erfcf uses the same
  // scheme. e^(−a²) = e^(−x²/2) is taken from the exact x² = s + sl, so a's rounding does not
  // reach the exponent, where a² up to ~105 would amplify it. The rest of the formula is
  // well conditioned in a.
  static inline V gelu_erf(V x) {
    // For |x| ≥ 14.5, Φ rounds to 0 or 1. The clamp keeps x² finite.
    const V xc = xsimd::min(V(14.5f), xsimd::max(V(-14.5f), x));
    const V a = xsimd::abs(xc) * V(0.707106781f);
    const V q = (a - V(2.0f)) / (a + V(2.0f));
    V P = V(-0x1.a1ad46p-12f);
    P = fmadd(P, q, V(-0x1.4169d6p-10f));
    P = fmadd(P, q, V(0x1.58373ep-10f));
    P = fmadd(P, q, V(0x1.1abd38p-7f));
    P = fmadd(P, q, V(-0x1.081f8ap-7f));
    P = fmadd(P, q, V(-0x1.bc08e8p-5f));
    P = fmadd(P, q, V(0x1.4ffc54p-3f));
    P = fmadd(P, q, V(-0x1.540852p-3f));
    P = fmadd(P, q, V(-0x1.7bf618p-4f));
    P = fmadd(P, q, V(0x1.1ba03ap-2f));
    const V ratio = (V(1.0f) + P) / fmadd(V(2.0f), a, V(1.0f));
    // e^(−x²/2) = e^(−s/2) · e^(−sl/2) ≈ e^(−s/2) · (1 − sl/2). Halving is exact.
    // As in over_one_plus_exp, no intermediate is subnormal unless the result is: the
    // Gaussian is held times 2^64 (hs = h·2^64; 0 past exp's clamp, where h rounds to 0),
    // x < 0 gives (x·hs)·2^−64, and 1 − h takes h no smaller than 2^−104.
    const V s = rounded(xc * xc);
    const V sl = fmadd(xc, xc, -s);
    const V gauss = xsimd::select(s >= V(208.0f), V(0.0f), exp<64>(V(-0.5f) * s)) * fmadd(V(-0.5f), sl, V(1.0f));
    const V hs = V(0.5f) * gauss * ratio;
    const auto neg = xc < V(0.0f);
    const V one_minus_h = V(1.0f) - xsimd::max(hs, V(0x1p-40f)) * V(0x1p-64f);
    return x * xsimd::select(neg, hs, one_minus_h) * xsimd::select(neg, V(0x1p-64f), V(1.0f));
  }
};

}  // namespace headwise::kernels::simd
