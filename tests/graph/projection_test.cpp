// Projection (graph/projection.hpp): y = x·W + b through the plan's choices — oneDNN
// primitives for the row classes, the registry kernel for the rest — against a float64
// reference, on every ISA this CPU has, for row counts on and around the class edges.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "graph/projection.hpp"
#include "kernels/dispatch.hpp"

namespace headwise::graph {
namespace {

using kernels::Isa;

struct Case {
  int M, K, N;
  bool bias, out_in, strided;
};

std::vector<Isa> usable_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar})
    if (kernels::may_use(isa)) out.push_back(isa);
  return out;
}

void check(const Case& c, Isa isa) {
  std::mt19937 g(c.M * 131 + c.K * 7 + c.N);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(size_t(c.K) * c.N), b(c.N);
  for (float& x : w) x = u(g);
  for (float& x : b) x = u(g);
  // out_in: W stored [N][K] (element (k, n) at n·K + k); else [K][N].
  const int64_t sk = c.out_in ? 1 : c.N, sn = c.out_in ? c.K : 1;
  std::unique_ptr<Projection> pl;
  Status s = Projection::create_f32(w.data(), c.K, c.N, sk, sn, c.bias ? b.data() : nullptr, isa, &pl);
  ASSERT_TRUE(s.ok()) << s.message();
  const int64_t ldx = c.K + (c.strided ? 5 : 0), ldy = c.N + (c.strided ? 3 : 0);
  std::vector<float> x(size_t(c.M) * ldx), y(size_t(c.M) * ldy, NAN);
  for (float& v : x) v = u(g);
  struct alignas(64) Line {
    char b[64];
  };
  std::vector<Line> scratch(pl->scratch_bytes(c.M) / 64 + 1);
  for (int threads : {1, 2}) {
    std::fill(y.begin(), y.end(), NAN);
    s = pl->run(x.data(), ldx, y.data(), ldy, c.M, threads, scratch.data());
    ASSERT_TRUE(s.ok()) << s.message();
    double worst = 0;
    for (int r = 0; r < c.M; ++r)
      for (int n = 0; n < c.N; ++n) {
        double ref = c.bias ? b[n] : 0.0, mag = std::fabs(ref);
        for (int k = 0; k < c.K; ++k) {
          const double p = double(x[r * ldx + k]) * w[k * sk + n * sn];
          ref += p;
          mag += std::fabs(p);
        }
        // fp32 accumulation over K terms: error ≤ ~K·2⁻²⁴·Σ|terms|; we allow 1e-6·Σ|terms|·√K
        const double err = std::fabs(y[r * ldy + n] - ref) / (mag * std::sqrt(double(c.K)) * 1e-6 + 1e-30);
        worst = std::max(worst, std::isnan(y[r * ldy + n]) ? INFINITY : err);
      }
    EXPECT_LE(worst, 1.0) << "M " << c.M << " K " << c.K << " N " << c.N << " isa "
                          << kernels::isa_name(isa) << " threads " << threads << " impl "
                          << pl->implementation(c.M);
  }
}

TEST(Projection, RowCountsAroundTheClassEdgesMatchReference) {
  for (Isa isa : usable_isas())
    for (int M : {1, 2, 3, 5, 8, 9, 15, 16, 17, 31, 33, 64, 100})
      for (auto [K, N] : {std::pair{16, 17}, {24, 64}, {100, 300}})
        for (bool bias : {false, true}) check({M, K, N, bias, true, false}, isa);
}

TEST(Projection, LayoutsAndStrides) {
  for (Isa isa : usable_isas())
    for (int M : {1, 4, 33})
      for (bool out_in : {false, true})
        for (bool strided : {false, true}) check({M, 200, 300, true, out_in, strided}, isa);
}

TEST(Projection, MoreRowsThanTheLargestClass) {
  check({Projection::kMaxClassRows + 21, 32, 48, true, true, false}, kernels::detected_isa());
}

TEST(Projection, RowsSplitIntoClassesThenTheSmallKernel) {
  std::vector<float> w(64 * 64, 0.25f);
  std::unique_ptr<Projection> pl;
  const Status s = Projection::create_f32(w.data(), 64, 64, 1, 64, nullptr, kernels::detected_isa(), &pl);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_FALSE(pl->small_kernel().empty()) << "no registry kernel for oneDNN's layout";
  EXPECT_EQ(pl->implementation(1), pl->small_kernel() + "×1");
  const std::string impl = pl->implementation(100);  // 64 + 32 + 4
  EXPECT_NE(impl.find("×64 + "), std::string::npos) << impl;
  EXPECT_NE(impl.find("×32 + " + pl->small_kernel() + "×4"), std::string::npos) << impl;
}

TEST(Projection, NeverTheReferenceMatmul) {
  for (auto [K, N] : {std::pair{768, 768}, {768, 2304}, {3072, 768}, {64, 512}, {172, 64}}) {
    std::vector<float> w(size_t(K) * N, 0.5f);
    std::unique_ptr<Projection> pl;
    const Status s = Projection::create_f32(w.data(), K, N, 1, K, nullptr, kernels::detected_isa(), &pl);
    ASSERT_TRUE(s.ok()) << s.message();
    for (int M : {1, 8, 9, 100, 1024}) {
      const std::string impl = pl->implementation(M);
      EXPECT_EQ(impl.find("ref"), std::string::npos) << K << "x" << N << " M " << M << ": " << impl;
    }
  }
}

}  // namespace
}  // namespace headwise::graph
