// The linear-kernel registry (kernels/matmul/linear.inc): EVERY line is run against a
// float64 reference on weights packed by hand in each layout it claims to support, for
// row counts around its row groups and thread counts 1 and 2. A line whose ISA this CPU
// lacks is reported as skipped, by name (never silently).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/matmul/linear.hpp"

namespace headwise::kernels {

// The low-bit weight types' lines (tests/kernels/quant_linear_test.cpp).
void check_quant_linear_kernel(const LinearKernel& lk);

// An entry's run() in two parts (LinearKernelImpl::prepare, then run_prepared on the
// calling thread) gives the bits run() gave (`want`, from `threads` threads: an
// output's sum does not depend on the threads). Slices of the weights from one prepare:
// tests/graph/projection_group_test.cpp.
void expect_two_part_run_matches(const LinearKernel& lk, const PackedWeights& w, const float* bias, const float* x,
                                 int64_t ldx, const float* want, int64_t ldy, int rows, int threads) {
  ASSERT_TRUE(lk.impl->prepare && lk.impl->run_prepared) << lk.symbol << " has no two-part run";
  std::vector<uint8_t> scratch(lk.impl->scratch_bytes(w, rows) + 64);
  void* sp = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  std::vector<float> y(size_t(rows) * ldy, NAN);
  lk.impl->prepare(w, x, ldx, rows, sp);
  lk.impl->run_prepared(w, bias, x, ldx, y.data(), ldy, rows, 1, sp);
  for (int r = 0; r < rows; ++r)
    ASSERT_EQ(std::memcmp(y.data() + r * ldy, want + r * ldy, size_t(w.N) * sizeof(float)), 0)
        << lk.symbol << ": row " << r << " of " << rows << " (run() on " << threads << " threads)";
}

namespace {

std::vector<const LinearKernel*> registry() {
  std::vector<const LinearKernel*> out;
  for (const LinearKernel& k : linear_kernels()) out.push_back(&k);
  return out;
}

struct Aligned64 {
  alignas(64) float f[16];
};

// W (K×N, element (k, n) at w[k·N + n]) in the f32 blocked layout of PackedWeights,
// 64-byte aligned like oneDNN's memory. Returns the storage; *data points into it.
std::vector<Aligned64> pack_blocked(const std::vector<float>& w, int K, int N, int KB, int NB,
                                    int* Kp, const float** data) {
  *Kp = (K + KB - 1) / KB * KB;
  const int nblk = (N + NB - 1) / NB;
  std::vector<Aligned64> out((size_t(nblk) * *Kp * NB + 15) / 16, Aligned64{});
  float* p = out[0].f;
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) p[(size_t(n / NB) * *Kp + k) * NB + n % NB] = w[size_t(k) * N + n];
  *data = p;
  return out;
}

class LinearKernelTest : public ::testing::TestWithParam<const LinearKernel*> {};

TEST_P(LinearKernelTest, MatchesFloat64Reference) {
  const LinearKernel& lk = *GetParam();
  if (!may_use(lk.isa)) GTEST_SKIP() << lk.symbol << ": this CPU has no " << isa_name(lk.isa);
  if (lk.type != WeightType::f32) return check_quant_linear_kernel(lk);
  int layouts = 0;
  // NB 0: the plain layout (oneDNN's gemm on a CPU without AVX-512), rows ld = N + 7 apart
  for (int NB : {0, 8, 16, 24, 32, 48, 64})
    for (auto [K, N] : {std::pair{16, 17}, {100, 130}, {257, 64}}) {
      const int KB = 16;
      std::mt19937 g(K * 31 + N + NB);
      std::uniform_real_distribution<float> u(-1, 1);
      std::vector<float> w(size_t(K) * N), b(N);
      for (float& x : w) x = u(g);
      for (float& x : b) x = u(g);
      PackedWeights pw;
      pw.K = K;
      pw.N = N;
      pw.KB = KB;
      pw.NB = NB;
      const float* data = nullptr;
      std::vector<Aligned64> packed;
      if (NB == 0) {
        pw.KB = 0;
        pw.Kp = K;
        pw.ld = N + 7;
        packed.assign((size_t(K) * pw.ld + 15) / 16, Aligned64{});
        float* p = packed[0].f;
        for (int k = 0; k < K; ++k)
          for (int n = 0; n < N; ++n) p[size_t(k) * pw.ld + n] = w[size_t(k) * N + n];
        data = p;
      } else {
        packed = pack_blocked(w, K, N, KB, NB, &pw.Kp, &data);
      }
      pw.data = data;
      if (!lk.impl->supports(pw)) continue;
      ++layouts;
      const int max_rows = lk.impl->max_rows > 0 ? lk.impl->max_rows : 17;
      for (int rows = 1; rows <= max_rows; ++rows)
        for (int threads : {1, 2}) {
          const int64_t ldx = K + 3, ldy = N + 5;  // strided rows
          std::vector<float> x(size_t(rows) * ldx), y(size_t(rows) * ldy, NAN);
          for (float& v : x) v = u(g);
          std::vector<Aligned64> scratch(lk.impl->scratch_bytes(pw, rows) / 64 + 1);
          lk.impl->run(pw, b.data(), x.data(), ldx, y.data(), ldy, rows, threads, scratch[0].f);
          expect_two_part_run_matches(lk, pw, b.data(), x.data(), ldx, y.data(), ldy, rows, threads);
          double worst = 0;
          for (int r = 0; r < rows; ++r)
            for (int n = 0; n < N; ++n) {
              double ref = b[n], mag = std::fabs(ref);
              for (int k = 0; k < K; ++k) {
                const double p = double(x[r * ldx + k]) * w[size_t(k) * N + n];
                ref += p;
                mag += std::fabs(p);
              }
              // fp32 accumulation over K terms: error ≤ ~K·2⁻²⁴·Σ|terms|; allowed 1e-6·Σ|terms|·√K
              const double err = std::fabs(y[r * ldy + n] - ref) / (mag * std::sqrt(double(K)) * 1e-6);
              worst = std::max(worst, std::isnan(y[r * ldy + n]) ? INFINITY : err);
            }
          ASSERT_LE(worst, 1.0) << lk.symbol << " NB " << NB << " K " << K << " N " << N << " rows "
                                << rows << " threads " << threads;
        }
    }
  EXPECT_GT(layouts, 0) << lk.symbol << " supports none of the layouts oneDNN may pick";
}

INSTANTIATE_TEST_SUITE_P(Registry, LinearKernelTest, ::testing::ValuesIn(registry()),
                         [](const ::testing::TestParamInfo<const LinearKernel*>& i) {
                           return std::string(i.param->symbol);
                         });

// The registry's contract with dispatch: every weight type has a scalar line (so every
// machine runs every model), and lines of one type come best ISA first.
TEST(LinearRegistry, EveryTypeHasAScalarKernelAndLinesAreOrdered) {
  for (int t = 0; t < int(WeightType::Count); ++t) {
    bool scalar = false;
    int last = 1 << 30;
    for (const LinearKernel* k : registry()) {
      if (int(k->type) != t) continue;
      EXPECT_LT(int(k->isa), last) << k->symbol << " is listed after a kernel of a lower ISA";
      last = int(k->isa);
      scalar |= k->isa == Isa::scalar;
    }
    EXPECT_TRUE(scalar) << weight_type_name(WeightType(t)) << " has no scalar kernel in linear.inc";
  }
}

}  // namespace
}  // namespace headwise::kernels
