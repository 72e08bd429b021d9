// The element-wise and row-wise kernel bodies. They are templated on the vector
// vocabulary S (simd::F32<arch> or simd::Scalar) and use its math, simd::Math<S>
// (math_xsimd.hpp / math_scalar.hpp). The ISA's translation unit includes those headers
// first, instantiates ElemBody<S> once (elementwise_f32_<isa>.cpp), and hands the
// functions out as an ElemFns table, one line of elementwise.inc. A plan selects the line
// of its ISA once; elementwise.cpp splits rows over threads.
//
// Every body works on a block of rows on the calling thread. It writes only the first
// `cols` floats of each output row: row tails go through a lane buffer, never a full
// vector store past the end.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/elementwise/elementwise.hpp"

namespace headwise::kernels {

namespace simd {
template <class S>
struct Math;
}  // namespace simd

// One ISA's element-wise kernels, each over `rows` rows on the calling thread.
struct ElemFns {
  void (*rmsnorm)(RowsIn x, const float* w, float eps, RowsOut y, int rows, int cols);
  void (*layernorm)(RowsIn x, const float* w, const float* b, float eps, RowsOut y, int rows,
                    int cols);
  void (*silu)(RowsOut x, int rows, int cols);
  void (*gelu_tanh)(RowsOut x, int rows, int cols);
  void (*gelu_erf)(RowsOut x, int rows, int cols);
  void (*swiglu)(RowsIn a, RowsIn b, RowsOut y, int rows, int cols);
  void (*add)(RowsIn a, RowsIn b, RowsOut y, int rows, int cols);
  void (*mul)(RowsIn a, RowsIn b, RowsOut y, int rows, int cols);
  void (*rope)(RowsOut x, int rows, int heads, int head_dim, const int32_t* pos,
               const float* cos_table, const float* sin_table, RopeStyle style);
};

namespace {

template <class S>
struct ElemBody {
  using V = typename S::V;
  using M = simd::Math<S>;
  static constexpr int W = S::W;

  // ---- row helpers ----------------------------------------------------------------
  // Writes lanes i < n of v to p[i] (row tails).
  static inline void store_partial(float* p, V v, int n) {
    alignas(64) float t[W];
    S::storea(t, v);
    for (int i = 0; i < n; ++i) p[i] = t[i];
  }

  // x[j] = f(x[j]) for j < n
  template <class F>
  static inline void map1(float* x, int n, F f) {
    int j = 0;
    for (; j + W <= n; j += W) S::store(x + j, f(S::load(x + j)));
    if (j < n) store_partial(x + j, f(S::load_partial(x + j, n - j)), n - j);
  }

  // y[j] = f(a[j], b[j]) for j < n. y may be a or b.
  template <class F>
  static inline void map2(const float* a, const float* b, float* y, int n, F f) {
    int j = 0;
    for (; j + W <= n; j += W) S::store(y + j, f(S::load(a + j), S::load(b + j)));
    if (j < n) {
      const int t = n - j;
      store_partial(y + j, f(S::load_partial(a + j, t), S::load_partial(b + j, t)), t);
    }
  }

  // Σ_j g(x[j]) for j < n, with acc = g(acc, v) on vectors and gs on scalars. Four vector
  // partial sums hide the add latency. The row tail is summed in scalar code, so that no
  // padding lane enters the sum (a zero lane would still add (0 − μ)²).
  template <class G, class Gs>
  static inline float row_reduce(const float* x, int n, G g, Gs gs) {
    V acc0 = S::zero(), acc1 = S::zero(), acc2 = S::zero(), acc3 = S::zero();
    int j = 0;
    for (; j + 4 * W <= n; j += 4 * W) {
      acc0 = g(acc0, S::load(x + j));
      acc1 = g(acc1, S::load(x + j + W));
      acc2 = g(acc2, S::load(x + j + 2 * W));
      acc3 = g(acc3, S::load(x + j + 3 * W));
    }
    for (; j + W <= n; j += W) acc0 = g(acc0, S::load(x + j));
    float sum = S::hsum((acc0 + acc1) + (acc2 + acc3));
    for (; j < n; ++j) sum += gs(x[j]);
    return sum;
  }

  // ---- norms ------------------------------------------------------------------------
  // As llama2.c: ss = Σx²; ss /= n; ss += eps; ss = 1/sqrtf(ss); y = w ⊙ (ss·x)
  static void rmsnorm(RowsIn x, const float* w, float eps, RowsOut y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data + r * x.stride;  // (cols,)
      float* yr = y.data + r * y.stride;        // (cols,)
      const auto plus_sq = [](V acc, V v) { return S::fma(v, v, acc); };
      const auto sq = [](float v) { return v * v; };
      float ss = row_reduce(xr, cols, plus_sq, sq);
      ss /= static_cast<float>(cols);
      ss += eps;
      ss = 1.0f / std::sqrt(ss);
      const V sv = S::set1(ss);
      map2(xr, w, yr, cols, [&](V xv, V wv) { return wv * (sv * xv); });
    }
  }

  // μ = Σx / n;  σ² = Σ(x − μ)² / n (two passes, no E[x²] − μ² cancellation);
  // y = (x − μ) · 1/sqrtf(σ² + eps) ⊙ w + b
  static void layernorm(RowsIn x, const float* w, const float* b, float eps, RowsOut y, int rows,
                        int cols) {
    const float n = static_cast<float>(cols);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data + r * x.stride;  // (cols,)
      float* yr = y.data + r * y.stride;        // (cols,)
      const auto plus = [](V acc, V v) { return acc + v; };
      const auto same = [](float v) { return v; };
      const float mean = row_reduce(xr, cols, plus, same) / n;
      const V mv = S::set1(mean);
      const auto centred_sq = [&](V acc, V v) { return S::fma(v - mv, v - mv, acc); };
      const auto centred_sq1 = [&](float v) { return (v - mean) * (v - mean); };
      const float var = row_reduce(xr, cols, centred_sq, centred_sq1) / n;
      const V rstd = S::set1(1.0f / std::sqrt(var + eps));
      if (b == nullptr) {
        map2(xr, w, yr, cols, [&](V xv, V wv) { return (xv - mv) * rstd * wv; });
        continue;
      }
      int j = 0;
      for (; j + W <= cols; j += W) {
        const V xhat = (S::load(xr + j) - mv) * rstd;
        S::store(yr + j, S::fma(xhat, S::load(w + j), S::load(b + j)));
      }
      if (j < cols) {
        const int t = cols - j;
        const V xhat = (S::load_partial(xr + j, t) - mv) * rstd;
        store_partial(yr + j, S::fma(xhat, S::load_partial(w + j, t), S::load_partial(b + j, t)),
                      t);
      }
    }
  }

  // ---- activations and binary ops ----------------------------------------------------
  template <class F>
  static inline void map_rows(RowsOut x, int rows, int cols, F f) {
    for (int r = 0; r < rows; ++r) map1(x.data + r * x.stride, cols, f);
  }
  template <class F>
  static inline void map_rows2(RowsIn a, RowsIn b, RowsOut y, int rows, int cols, F f) {
    for (int r = 0; r < rows; ++r)
      map2(a.data + r * a.stride, b.data + r * b.stride, y.data + r * y.stride, cols, f);
  }

  static void silu(RowsOut x, int rows, int cols) {
    map_rows(x, rows, cols, [](V v) { return M::silu(v); });
  }
  static void gelu_tanh(RowsOut x, int rows, int cols) {
    map_rows(x, rows, cols, [](V v) { return M::gelu_tanh(v); });
  }
  static void gelu_erf(RowsOut x, int rows, int cols) {
    map_rows(x, rows, cols, [](V v) { return M::gelu_erf(v); });
  }
  // y = silu(a) ⊙ b. silu(a) is formed first, so a·b cannot overflow before it is damped.
  static void swiglu(RowsIn a, RowsIn b, RowsOut y, int rows, int cols) {
    map_rows2(a, b, y, rows, cols, [](V av, V bv) { return M::silu(av) * bv; });
  }
  static void add(RowsIn a, RowsIn b, RowsOut y, int rows, int cols) {
    map_rows2(a, b, y, rows, cols, [](V av, V bv) { return av + bv; });
  }
  static void mul(RowsIn a, RowsIn b, RowsOut y, int rows, int cols) {
    map_rows2(a, b, y, rows, cols, [](V av, V bv) { return av * bv; });
  }

  // ---- rotary embedding --------------------------------------------------------------
  // (x0[i], x1[i]) ← (x0·c − x1·s, x0·s + x1·c) for i < n, with c = cs[i] and s = sn[i]
  static inline void rotate_half(float* x0, float* x1, const float* cs, const float* sn, int n) {
    int i = 0;
    for (; i + W <= n; i += W) {
      const V a = S::load(x0 + i), b = S::load(x1 + i);
      const V c = S::load(cs + i), s = S::load(sn + i);
      S::store(x0 + i, a * c - b * s);
      S::store(x1 + i, a * s + b * c);
    }
    if (i < n) {
      const int t = n - i;
      const V a = S::load_partial(x0 + i, t), b = S::load_partial(x1 + i, t);
      const V c = S::load_partial(cs + i, t), s = S::load_partial(sn + i, t);
      store_partial(x0 + i, a * c - b * s, t);
      store_partial(x1 + i, a * s + b * c, t);
    }
  }

  // The same rotation, for the pairs (x[2i], x[2i+1]). With adjacent pairs, a lane-wise
  // version would need an even/odd shuffle that the vocabulary does not have. The loop is
  // small next to the projections: head_dim/2 pairs per head per token. GCC vectorises it
  // under the ISA flags of the translation unit.
  static inline void rotate_interleaved(float* x, const float* cs, const float* sn, int n) {
    for (int i = 0; i < n; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * cs[i] - b * sn[i];
      x[2 * i + 1] = a * sn[i] + b * cs[i];
    }
  }

  static void rope(RowsOut x, int rows, int heads, int head_dim, const int32_t* pos,
                   const float* cos_table, const float* sin_table, RopeStyle style) {
    const int half = head_dim / 2;
    for (int r = 0; r < rows; ++r) {
      const float* cs = cos_table + int64_t(pos[r]) * half;  // (half,)
      const float* sn = sin_table + int64_t(pos[r]) * half;  // (half,)
      for (int h = 0; h < heads; ++h) {
        float* xh = x.data + r * x.stride + int64_t(h) * head_dim;  // (head_dim,)
        if (style == RopeStyle::half)
          rotate_half(xh, xh + half, cs, sn, half);
        else
          rotate_interleaved(xh, cs, sn, half);
      }
    }
  }

  static constexpr ElemFns table() {
    return {rmsnorm, layernorm, silu, gelu_tanh, gelu_erf, swiglu, add, mul, rope};
  }
};

}  // namespace
}  // namespace headwise::kernels
