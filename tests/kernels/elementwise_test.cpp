// The element-wise kernels (kernels/elementwise/elementwise.hpp): every line of
// elementwise.inc whose ISA the CPU has (the registry's list, so a new line is tested
// without an edit here), against float64 references written out below. The sweep covers cols {1, 7, 16, 17, 64, 768, 1000} (around vector
// widths 8 and 16, and tails), rows {1, 3, 65}, row strides larger than cols (the padding
// must stay untouched), in-place and out-of-place use, and 1 and 2 threads. 65 × 768 and
// 65 × 1000 are above the size where the rows are split over threads.
//
// Tolerances (|got − ref| per element):
//   rmsnorm       ≤ 1e-5·|ref|. A float sum of squares is off by ~1e-6 relative at most.
//   layernorm     ≤ 1e-5·(|w|·(|x̂| + 1) + |b|), x̂ = (x − μ)/σ. A float μ and σ are off by
//                 ~1e-6 relative, which moves x̂ by ~1e-6·(|x̂| + |μ|/σ), and the test data
//                 keeps |μ|/σ below 1.
//   activations   ≤ 2e-6·|ref| + FLT_MIN, over the whole float range. FLT_MIN covers
//                 results that underflow into the subnormals, where float has no relative
//                 precision left.
//   add, mul      exact (IEEE: one correctly rounded operation).
//   rope          ≤ 1e-6·(|x0| + |x1|), against the same float tables in float64.
//   embedding, rope_tables   bit-exact.
#include <gtest/gtest.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/elementwise/elementwise.hpp"

namespace headwise::test {
namespace {

using kernels::RopeStyle;
using kernels::RowsIn;
using kernels::RowsOut;

constexpr int kCols[] = {1, 7, 16, 17, 64, 768, 1000};
constexpr int kRows[] = {1, 3, 65};
constexpr int kPad = 5;                // row stride = cols + kPad
constexpr float kSentinel = -7.25e9f;  // fills the padding; must survive every kernel
constexpr double kActTol = 2e-6;

// ---- float64 references ---------------------------------------------------------------
double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }
// ½x(1 + tanh z) written as x·σ(2z): the same value, without the cancellation of 1 + tanh z
// (which even double rounds to 0 for z < −19). GeluTanhReferenceIsTheTanhFormula checks it.
double gelu_tanh_ref(double x) {
  const double z = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * z));
}
// ½x(1 + erf(x/√2)) = ½x·erfc(−x/√2), since 1 + erf(u) = erfc(−u). erfc is accurate in
// the negative tail.
double gelu_erf_ref(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

// ---- row buffers ------------------------------------------------------------------------
// rows × cols floats with stride cols + kPad; the padding holds kSentinel.
struct Rows {
  int rows, cols;
  int64_t stride;
  std::vector<float> v;
  Rows(int r, int c) : rows(r), cols(c), stride(c + kPad), v(size_t(r) * (c + kPad), kSentinel) {}
  float& at(int r, int c) { return v[size_t(r) * stride + c]; }
  float at(int r, int c) const { return v[size_t(r) * stride + c]; }
  RowsIn in() const { return {v.data(), stride}; }
  RowsOut out() { return {v.data(), stride}; }
  void fill(std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) at(r, c) = d(rng);
  }
  void fill_nan() {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) at(r, c) = NAN;
  }
  // Number of padding floats that no longer hold kSentinel.
  int padding_changed() const {
    int n = 0;
    for (int r = 0; r < rows; ++r)
      for (int c = cols; c < stride; ++c)
        n += std::memcmp(&v[size_t(r) * stride + c], &kSentinel, 4) != 0;
    return n;
  }
};

std::vector<float> random_vec(std::mt19937& rng, int n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::string where(int rows, int cols, int threads, bool inplace) {
  std::ostringstream s;
  s << "rows=" << rows << " cols=" << cols << " threads=" << threads
    << (inplace ? " in-place" : " out-of-place");
  return s.str();
}

// ---- the fixture: one ISA per parameter ------------------------------------------------
class Elementwise : public ::testing::TestWithParam<const kernels::ElemKernels*> {
 protected:
  void SetUp() override {
    if (!kernels::may_use(k().isa))
      GTEST_SKIP() << k().name << ": CPU lacks " << kernels::isa_name(k().isa);
  }
  static const kernels::ElemKernels& k() { return *GetParam(); }
};

// Runs check(rows, cols, threads, inplace) over the whole sweep.
template <class F>
void sweep(F check) {
  for (int rows : kRows)
    for (int cols : kCols)
      for (int threads : {1, 2})
        for (bool inplace : {false, true}) check(rows, cols, threads, inplace);
}

TEST_P(Elementwise, RmsNorm) {
  std::mt19937 rng(1);
  sweep([&](int rows, int cols, int threads, bool inplace) {
    Rows x(rows, cols), y(rows, cols);
    x.fill(rng, -3.0f, 3.0f);
    y.fill_nan();
    const std::vector<float> w = random_vec(rng, cols, 0.5f, 1.5f);
    const float eps = 1e-5f;
    const Rows x0 = x;
    Rows& out = inplace ? x : y;
    kernels::rmsnorm(k(), x.in(), w.data(), eps, out.out(), rows, cols, threads);
    int bad = 0;
    for (int r = 0; r < rows; ++r) {
      double ss = 0.0;
      for (int c = 0; c < cols; ++c) ss += double(x0.at(r, c)) * x0.at(r, c);
      const double inv = 1.0 / std::sqrt(ss / cols + eps);
      for (int c = 0; c < cols; ++c) {
        const double ref = x0.at(r, c) * inv * w[c];
        bad += !(std::fabs(out.at(r, c) - ref) <= 1e-5 * std::fabs(ref));
      }
    }
    EXPECT_EQ(bad, 0) << where(rows, cols, threads, inplace);
    EXPECT_EQ(out.padding_changed(), 0) << where(rows, cols, threads, inplace);
  });
}

TEST_P(Elementwise, LayerNorm) {
  std::mt19937 rng(2);
  sweep([&](int rows, int cols, int threads, bool inplace) {
    for (bool bias : {false, true}) {
      Rows x(rows, cols), y(rows, cols);
      x.fill(rng, -2.0f, 3.0f);  // μ ≈ 0.5, σ ≈ 1.4
      y.fill_nan();
      const std::vector<float> w = random_vec(rng, cols, -1.5f, 1.5f);
      const std::vector<float> b = random_vec(rng, cols, -1.0f, 1.0f);
      const float eps = 1e-5f;
      const Rows x0 = x;
      Rows& out = inplace ? x : y;
      kernels::layernorm(k(), x.in(), w.data(), bias ? b.data() : nullptr, eps, out.out(), rows, cols,
                         threads);
      int bad = 0;
      for (int r = 0; r < rows; ++r) {
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < cols; ++c) mean += x0.at(r, c);
        mean /= cols;
        for (int c = 0; c < cols; ++c) var += (x0.at(r, c) - mean) * (x0.at(r, c) - mean);
        var /= cols;
        const double rstd = 1.0 / std::sqrt(var + eps);
        for (int c = 0; c < cols; ++c) {
          const double xhat = (x0.at(r, c) - mean) * rstd;
          const double bc = bias ? b[c] : 0.0;
          const double ref = xhat * w[c] + bc;
          const double tol = 1e-5 * (std::fabs(w[c]) * (std::fabs(xhat) + 1.0) + std::fabs(bc));
          bad += !(std::fabs(out.at(r, c) - ref) <= tol);
        }
      }
      EXPECT_EQ(bad, 0) << where(rows, cols, threads, inplace) << (bias ? " bias" : "");
      EXPECT_EQ(out.padding_changed(), 0) << where(rows, cols, threads, inplace);
    }
  });
}

// ---- activations ---------------------------------------------------------------------------
using ActFn = void (*)(const kernels::ElemKernels&, RowsOut, int, int, int);
struct Act {
  const char* name;
  ActFn fn;
  double (*ref)(double);
};
const Act kActs[] = {{"silu", kernels::silu, silu_ref},
                     {"gelu_tanh", kernels::gelu_tanh, gelu_tanh_ref},
                     {"gelu_erf", kernels::gelu_erf, gelu_erf_ref}};

bool act_close(float got, double ref) {
  return std::fabs(got - ref) <= kActTol * std::fabs(ref) + FLT_MIN;
}

TEST_P(Elementwise, ActivationsSweep) {
  std::mt19937 rng(3);
  for (const Act& act : kActs)
    sweep([&](int rows, int cols, int threads, bool inplace) {
      if (!inplace) return;  // these kernels are in place only
      Rows x(rows, cols);
      x.fill(rng, -12.0f, 12.0f);
      const Rows x0 = x;
      act.fn(k(), x.out(), rows, cols, threads);
      int bad = 0;
      std::ostringstream first;
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          if (!act_close(x.at(r, c), act.ref(x0.at(r, c))) && bad++ == 0)
            first << "; first: " << act.name << "(" << x0.at(r, c) << ") = " << x.at(r, c)
                  << ", expected " << act.ref(x0.at(r, c));
      EXPECT_EQ(bad, 0) << act.name << " " << where(rows, cols, threads, inplace) << first.str();
      EXPECT_EQ(x.padding_changed(), 0) << act.name << " " << where(rows, cols, threads, inplace);
    });
}

// A dense grid over the range where the activations change: silu's exp(−x) runs through
// its whole finite range, and gelu's tails run down to underflow.
TEST_P(Elementwise, ActivationsDenseGrid) {
  std::vector<float> grid;
  for (int i = -11000; i <= 11000; ++i) grid.push_back(i * 0.01f);
  for (const Act& act : kActs) {
    std::vector<float> x = grid;
    act.fn(k(), {x.data(), int64_t(x.size())}, 1, int(x.size()), 1);
    int bad = 0;
    double worst = 0.0;
    float worst_x = 0.0f;
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = act.ref(grid[i]);
      if (!act_close(x[i], ref)) ++bad;
      // Relative error away from the subnormals, where it says how good the formula is.
      if (std::fabs(ref) > 1e-30) {
        const double e = std::fabs(x[i] - ref) / std::fabs(ref);
        if (e > worst) worst = e, worst_x = grid[i];
      }
    }
    EXPECT_EQ(bad, 0) << act.name;
    std::cout << "[   INFO   ] " << act.name << " " << k().name
              << ": worst relative error " << worst << " (at x=" << worst_x
              << ", |result| > 1e-30)\n";
  }
}

// Huge inputs saturate (x·1 for x > 0, −0 for x < 0) without NaN or inf from inside the
// formula.
TEST_P(Elementwise, ActivationsSaturateForLargeInputs) {
  const float mags[] = {20.0f,  30.0f, 50.0f, 80.0f, 87.0f, 88.5f, 89.0f, 100.0f, 104.0f,
                        110.0f, 1e3f,  1e6f,  1e10f, 1e19f, 1e20f, 1e30f, FLT_MAX};
  std::vector<float> in;
  for (float m : mags) {
    in.push_back(m);
    in.push_back(-m);
  }
  for (const Act& act : kActs) {
    std::vector<float> x = in;
    act.fn(k(), {x.data(), int64_t(x.size())}, 1, int(x.size()), 1);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_TRUE(std::isfinite(x[i])) << act.name << "(" << in[i] << ") = " << x[i];
      EXPECT_TRUE(act_close(x[i], act.ref(in[i]))) << act.name << "(" << in[i] << ") = " << x[i];
      if (in[i] >= 30.0f) {
        EXPECT_EQ(x[i], in[i]) << act.name << "(" << in[i] << ")";
      }
      if (in[i] <= -110.0f) {
        EXPECT_EQ(x[i], 0.0f) << act.name << "(" << in[i] << ")";
      }
    }
  }
  // NaN stays visible.
  for (const Act& act : kActs) {
    float x[3] = {NAN, 1.0f, -NAN};
    act.fn(k(), {x, 3}, 1, 3, 1);
    EXPECT_TRUE(std::isnan(x[0]) && std::isnan(x[2])) << act.name;
  }
  // swiglu's silu(a)·b with a huge negative a and a large b: no inf·0.
  std::vector<float> a = {-1e30f, -FLT_MAX, 1e30f}, b = {1e30f, 2.0f, 1e-30f}, y(3);
  kernels::swiglu(k(), {a.data(), 3}, {b.data(), 3}, {y.data(), 3}, 1, 3, 1);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_NEAR(y[2], 1.0f, 1e-6f);
}

// Where a result is a normal float, no step on the way to it is subnormal: an instruction
// that makes or reads a subnormal takes a microcode assist (~150 cycles on Intel; a
// swiglu over N(0, 100) inputs ran 7× slower when e^(−|x|) underflowed for |x| > 87.3).
// MXCSR's sticky flags say whether any did: DE (a subnormal operand) and UE (a result
// that underflowed). Inputs: a grid over ±120 whose float64 results are at least 2·FLT_MIN,
// and on the vector lines the saturating magnitudes (results x or −0). One thread: the
// flags are the caller's.
TEST_P(Elementwise, ActivationsMakeNoSubnormalsOnTheWayToNormalResults) {
#if !defined(__x86_64__) && !defined(__i386__)
  GTEST_SKIP() << "reads x86's MXCSR";
#else
  for (const Act& act : kActs) {
    std::vector<float> in;
    for (int i = -12000; i <= 12000; ++i) {
      const float v = i * 0.01f;
      if (std::fabs(act.ref(v)) >= 2.0 * FLT_MIN) in.push_back(v);
    }
    // (The scalar line evaluates in double with libm, whose exp of −1e3 underflows to 0
    // and says so: there the flag is libm's, on the portable path, not a slow assist.)
    if (k().isa != kernels::Isa::scalar)
      for (float m : {1e3f, 1e6f, 1e30f, FLT_MAX}) {
        in.push_back(m);
        in.push_back(-m);
      }
    std::vector<float> x = in;
    constexpr unsigned kDenormal = 1u << 1, kUnderflow = 1u << 4;
    _mm_setcsr(_mm_getcsr() & ~0x3Fu);
    act.fn(k(), {x.data(), int64_t(x.size())}, 1, int(x.size()), 1);
    const unsigned flags = _mm_getcsr();
    EXPECT_EQ(flags & (kDenormal | kUnderflow), 0u)
        << act.name << " " << k().name << ": MXCSR flags 0x" << std::hex << (flags & 0x3Fu);
    // and the results are still right
    int bad = 0;
    for (size_t i = 0; i < x.size(); ++i) bad += !act_close(x[i], act.ref(in[i]));
    EXPECT_EQ(bad, 0) << act.name << " " << k().name;
  }
#endif
}

// The σ-form used by gelu_tanh_ref is the literal tanh formula wherever the latter does not
// cancel.
TEST(ElementwiseReference, GeluTanhReferenceIsTheTanhFormula) {
  for (double x = -3.0; x <= 20.0; x += 0.001) {
    const double literal =
        0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    ASSERT_NEAR(gelu_tanh_ref(x), literal, 1e-12 * std::fabs(literal) + 1e-300) << x;
  }
}

// ---- binary ops ------------------------------------------------------------------------
TEST_P(Elementwise, SwiGluAddMul) {
  std::mt19937 rng(4);
  enum Op { kSwiglu, kAdd, kMul };
  for (Op op : {kSwiglu, kAdd, kMul})
    sweep([&](int rows, int cols, int threads, bool inplace) {
      Rows a(rows, cols), b(rows, cols), y(rows, cols);
      a.fill(rng, -10.0f, 10.0f);
      b.fill(rng, -3.0f, 3.0f);
      y.fill_nan();
      const Rows a0 = a, b0 = b;
      // In place: y is a for swiglu and add, b for mul (both aliasings are allowed).
      Rows& out = !inplace ? y : (op == kMul ? b : a);
      auto* fn = op == kSwiglu ? kernels::swiglu : op == kAdd ? kernels::add : kernels::mul;
      fn(k(), a.in(), b.in(), out.out(), rows, cols, threads);
      int bad = 0;
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
          const double av = a0.at(r, c), bv = b0.at(r, c);
          const float got = out.at(r, c);
          if (op == kSwiglu)
            bad += !act_close(got, silu_ref(av) * bv);
          else if (op == kAdd)
            bad += bits(got) != bits(static_cast<float>(av + bv));
          else
            bad += bits(got) != bits(static_cast<float>(av * bv));
        }
      const char* name = op == kSwiglu ? "swiglu" : op == kAdd ? "add" : "mul";
      EXPECT_EQ(bad, 0) << name << " " << where(rows, cols, threads, inplace);
      EXPECT_EQ(out.padding_changed(), 0) << name << " " << where(rows, cols, threads, inplace);
    });
}

// ---- embedding ------------------------------------------------------------------------
TEST_P(Elementwise, EmbeddingGathersRows) {
  std::mt19937 rng(5);
  const int vocab = 50;
  for (int rows : kRows)
    for (int cols : kCols)
      for (int threads : {1, 2}) {
        const std::vector<float> table = random_vec(rng, vocab * cols, -1.0f, 1.0f);
        std::vector<int32_t> ids(rows);
        std::uniform_int_distribution<int> pick(0, vocab - 1);
        for (int32_t& id : ids) id = pick(rng);
        ids[0] = vocab - 1;             // the last row of the table
        if (rows > 2) ids[2] = ids[1];  // repeats
        Rows y(rows, cols);
        y.fill_nan();
        kernels::embedding(table.data(), cols, ids.data(), y.out(), rows, threads);
        int bad = 0;
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c)
            bad += bits(y.at(r, c)) != bits(table[size_t(ids[r]) * cols + c]);
        EXPECT_EQ(bad, 0) << where(rows, cols, threads, false);
        EXPECT_EQ(y.padding_changed(), 0) << where(rows, cols, threads, false);
      }
}

// ---- rotary embedding ------------------------------------------------------------------
TEST(ElementwiseRope, TablesAreBitExactWithLlama2c) {
  for (int head_size : {2, 8, 64, 80, 128})
    for (float theta : {10000.0f, 500000.0f}) {
      const int max_pos = 300, half = head_size / 2;
      std::vector<float> cs(size_t(max_pos) * half), sn(cs.size());
      kernels::rope_tables(theta, head_size, max_pos, cs.data(), sn.data());
      int bad = 0;
      for (int pos = 0; pos < max_pos; ++pos)
        for (int i = 0; i < head_size; i += 2) {
          // llama2.c run.c forward(), with 10000.0f as theta:
          int head_dim = i % head_size;
          float freq = 1.0f / powf(theta, head_dim / (float)head_size);
          float val = pos * freq;
          float fcr = cosf(val);
          float fci = sinf(val);
          bad += bits(cs[size_t(pos) * half + i / 2]) != bits(fcr);
          bad += bits(sn[size_t(pos) * half + i / 2]) != bits(fci);
          // Not garbage either: close to cos/sin(pos·θ^(−i/d)) in float64, up to the float
          // rounding of pos·freq.
          const double v = pos * std::pow(double(theta), -double(i) / head_size);
          bad += std::fabs(fcr - std::cos(v)) > 1e-6 + 4e-7 * pos;
        }
      EXPECT_EQ(bad, 0) << "head_size=" << head_size << " theta=" << theta;
    }
}

TEST_P(Elementwise, RopeBothStyles) {
  std::mt19937 rng(6);
  const int max_pos = 2048;
  for (int head_dim : {2, 8, 64, 80, 128}) {
    const int half = head_dim / 2;
    std::vector<float> cs(size_t(max_pos) * half), sn(cs.size());
    kernels::rope_tables(10000.0f, head_dim, max_pos, cs.data(), sn.data());
    for (int heads : {1, 3, 8})
      for (int rows : kRows)
        for (int threads : {1, 2})
          for (RopeStyle style : {RopeStyle::interleaved, RopeStyle::half}) {
            // The rows carry 7 more columns after the heads (say, the next tensor of a fused
            // QKV row). Rope must not touch them.
            const int cols = heads * head_dim + 7;
            Rows x(rows, cols);
            x.fill(rng, -2.0f, 2.0f);
            std::vector<int32_t> pos(rows);
            std::uniform_int_distribution<int> pick(0, max_pos - 1);
            for (int32_t& p : pos) p = pick(rng);
            pos[0] = 0;
            const Rows x0 = x;
            kernels::rope(k(), x.out(), rows, heads, head_dim, pos.data(), cs.data(), sn.data(), style,
                          threads);
            int bad = 0;
            for (int r = 0; r < rows; ++r) {
              for (int h = 0; h < heads; ++h)
                for (int i = 0; i < half; ++i) {
                  const int j0 = h * head_dim + (style == RopeStyle::half ? i : 2 * i);
                  const int j1 = h * head_dim + (style == RopeStyle::half ? i + half : 2 * i + 1);
                  const double c = cs[size_t(pos[r]) * half + i];
                  const double s = sn[size_t(pos[r]) * half + i];
                  const double a = x0.at(r, j0), b = x0.at(r, j1);
                  const double tol = 1e-6 * (std::fabs(a) + std::fabs(b));
                  bad += !(std::fabs(x.at(r, j0) - (a * c - b * s)) <= tol);
                  bad += !(std::fabs(x.at(r, j1) - (a * s + b * c)) <= tol);
                }
              for (int j = heads * head_dim; j < cols; ++j)
                bad += bits(x.at(r, j)) != bits(x0.at(r, j));
            }
            EXPECT_EQ(bad, 0) << "head_dim=" << head_dim << " heads=" << heads << " rows=" << rows
                              << " threads=" << threads
                              << (style == RopeStyle::half ? " half" : " interleaved");
            EXPECT_EQ(x.padding_changed(), 0);
          }
  }
}

std::vector<const kernels::ElemKernels*> every_line() {
  std::vector<const kernels::ElemKernels*> out;
  for (const kernels::ElemKernels& e : kernels::elementwise_kernels()) out.push_back(&e);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, Elementwise, ::testing::ValuesIn(every_line()),
                         [](const ::testing::TestParamInfo<const kernels::ElemKernels*>& i) {
                           return std::string(i.param->name);
                         });

}  // namespace
}  // namespace headwise::test
