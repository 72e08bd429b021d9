// The scalar member of the vector vocabulary (width 1): the same kernel templates
// compile for it, which gives a portable path that needs no AVX at all.
#pragma once

#include <cmath>
#include <cstdint>

namespace headwise::kernels::simd {

struct Scalar {
  using V = float;
  static constexpr int W = 1;

  static inline V zero() { return 0.0f; }
  static inline V set1(float x) { return x; }
  static inline V load(const float* p) { return *p; }
  static inline V loada(const float* p) { return *p; }
  static inline void store(float* p, V v) { *p = v; }
  static inline void storea(float* p, V v) { *p = v; }
  static inline V fma(V a, V b, V c) { return a * b + c; }
  static inline V max(V a, V b) { return a > b ? a : b; }
  static inline float hsum(V a) { return a; }
  static inline float hmax(V a) { return a; }
  static inline V load_partial(const float* p, int n) { return n > 0 ? *p : 0.0f; }
  static inline V mask_lt(V x, int first, int bound) { return first < bound ? -INFINITY : x; }
  static inline V hsum_lanes(const V* acc) { return acc[0]; }
  static inline void transpose(V*) {}  // a 1×1 block
  static inline V exp2(V x) { return x < -126.0f ? 0.0f : std::exp2(x); }
};

}  // namespace headwise::kernels::simd
