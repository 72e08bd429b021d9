// What attention means, checked on numbers small enough to work out by hand, on every
// ISA: the lesson's worked examples, head/feature bookkeeping (the classic bug of
// splitting heads along tokens), independence of heads, and numerical stability.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "headwise/attention.hpp"
#include "kernels/dispatch.hpp"
#include "tests/status_assert.hpp"

namespace headwise::test {
namespace {

using kernels::Isa;

class PerIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!kernels::may_use(GetParam())) GTEST_SKIP() << "CPU lacks " << kernels::isa_name(GetParam());
    ASSERT_TRUE(kernels::set_isa_override(GetParam()));
  }
  void TearDown() override { kernels::clear_isa_override(); }
};

// One query against Tk keys, head_dim = Tk, V = identity: the output row IS the
// attention weights. q = e0 and k_j = s_j·e0 make the scores exactly s (scale 1).
std::vector<float> weights_for_scores(const std::vector<float>& s) {
  const int T = static_cast<int>(s.size());
  std::vector<float> q(T, 0.0f), k(T * T, 0.0f), v(T * T, 0.0f), o(T, NAN);
  q[0] = 1.0f;
  for (int j = 0; j < T; ++j) {
    k[j * T] = s[j];
    v[j * T + j] = 1.0f;
  }
  AttentionParams p;
  p.q_len = 1;
  p.kv_len = T;
  p.q_heads = p.kv_heads = 1;
  p.head_dim = T;
  p.causal = false;
  p.scale = 1.0f;
  HW_EXPECT_OK(attention(p, packed_input(q.data(), 1, 1, T), packed_input(k.data(), T, 1, T),
                        packed_input(v.data(), T, 1, T), packed_output(o.data(), 1, 1, T)));
  return o;
}

TEST_P(PerIsa, LessonWorkedNumbers) {
  // scores [2, 0, 2] → weights ≈ [0.47, 0.06, 0.47]: e²/(2e² + 1) = 0.4683, 1/(2e² + 1) = 0.0634
  auto w = weights_for_scores({2, 0, 2});
  EXPECT_NEAR(w[0], 0.4683, 5e-5);
  EXPECT_NEAR(w[1], 0.0634, 5e-5);
  EXPECT_NEAR(w[2], 0.4683, 5e-5);
  // [6, 0, 6] → [0.50, 0.00, 0.50]: the middle weight is 1/(2e⁶ + 1) = 0.00124
  w = weights_for_scores({6, 0, 6});
  EXPECT_NEAR(w[0], 0.4994, 5e-5);
  EXPECT_NEAR(w[1], 0.00124, 5e-6);
  EXPECT_NEAR(w[2], 0.4994, 5e-5);
}

TEST_P(PerIsa, TwoHeadsEachFindTheirTarget) {
  // Two heads over three keys; head 0 scores [3, 0, 0] and head 1 [0, 0, 3]. Each puts
  // e³/(e³ + 2) = 0.909 on its own target. head_dim 3, V = identity per head.
  const int T = 3, D = 3, H = 2;
  std::vector<float> q(H * D, 0.0f), k(T * H * D, 0.0f), v(T * H * D, 0.0f), o(H * D, NAN);
  q[0 * D] = 1.0f;
  q[1 * D] = 1.0f;
  const float s0[3] = {3, 0, 0}, s1[3] = {0, 0, 3};
  for (int j = 0; j < T; ++j) {
    k[(j * H + 0) * D] = s0[j];
    k[(j * H + 1) * D] = s1[j];
    v[(j * H + 0) * D + j] = 1.0f;
    v[(j * H + 1) * D + j] = 1.0f;
  }
  AttentionParams p;
  p.q_len = 1;
  p.kv_len = T;
  p.q_heads = p.kv_heads = H;
  p.head_dim = D;
  p.causal = false;
  p.scale = 1.0f;
  HW_ASSERT_OK(attention(p, packed_input(q.data(), 1, H, D), packed_input(k.data(), T, H, D),
                        packed_input(v.data(), T, H, D), packed_output(o.data(), 1, H, D)));
  const double target = std::exp(3.0) / (std::exp(3.0) + 2.0);  // 0.9094
  EXPECT_NEAR(o[0 * D + 0], target, 1e-5);
  EXPECT_NEAR(o[1 * D + 2], target, 1e-5);
}

// Labelled inputs: entry (token t, feature f) = 10·t + f. Head h must read features
// h·D .. h·D + D − 1 of EVERY token. With q = 0 all weights are equal, so head h of
// any query outputs mean_t(10·t) + h·D + d over the tokens it sees; splitting heads
// along tokens (head h reading tokens h·T/H ..) gives different numbers.
TEST_P(PerIsa, HeadsSplitFeaturesNotTokens) {
  const int T = 8, H = 4, D = 4, C = H * D;
  std::vector<float> x(T * C), zeros(T * C, 0.0f), o(T * C, NAN);
  for (int t = 0; t < T; ++t)
    for (int f = 0; f < C; ++f) x[t * C + f] = 10.0f * t + f;
  for (bool causal : {false, true}) {
    AttentionParams p;
    p.q_len = p.kv_len = T;
    p.q_heads = p.kv_heads = H;
    p.head_dim = D;
    p.causal = causal;
    HW_ASSERT_OK(attention(p, packed_input(zeros.data(), T, H, D), packed_input(x.data(), T, H, D),
                          packed_input(x.data(), T, H, D), packed_output(o.data(), T, H, D)));
    for (int i = 0; i < T; ++i) {
      const int seen = causal ? i + 1 : T;
      const double mean_t = (seen - 1) / 2.0;  // mean of 0 .. seen−1
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d)
          EXPECT_NEAR(o[i * C + h * D + d], 10.0 * mean_t + h * D + d, 1e-4)
              << "query " << i << " head " << h << " feature " << d << (causal ? " causal" : "");
    }
  }
}

// Changing head j's K/V slice never changes head i's output (bit for bit).
TEST_P(PerIsa, HeadsAreIndependent) {
  const int T = 70, H = 4, D = 32, C = H * D;
  std::vector<float> q(T * C), k(T * C), v(T * C), o1(T * C), o2(T * C);
  unsigned s = 7;
  auto rnd = [&] { s = s * 1103515245u + 12345u; return ((s >> 9) & 0xffff) / 32768.0f - 1.0f; };
  for (auto* b : {&q, &k, &v})
    for (float& f : *b) f = rnd();
  AttentionParams p;
  p.q_len = p.kv_len = T;
  p.q_heads = p.kv_heads = H;
  p.head_dim = D;
  auto run = [&](std::vector<float>& o) {
    HW_ASSERT_OK(attention(p, packed_input(q.data(), T, H, D), packed_input(k.data(), T, H, D),
                          packed_input(v.data(), T, H, D), packed_output(o.data(), T, H, D)));
  };
  run(o1);
  const int j = 2;  // scramble head 2's keys and values
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d) {
      k[t * C + j * D + d] = 5.0f * rnd();
      v[t * C + j * D + d] = 5.0f * rnd();
    }
  run(o2);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      bool changed = false;
      for (int d = 0; d < D; ++d) {
        if (h != j) {
          EXPECT_EQ(o1[t * C + h * D + d], o2[t * C + h * D + d]) << "head " << h;
        }
        changed = changed || o1[t * C + h * D + d] != o2[t * C + h * D + d];
      }
      if (h == j) {
        EXPECT_TRUE(changed) << "head " << j << " must see its own change";
      }
    }
}

// Scores of ±1e4 stay finite and pick the maximum; all-equal scores give the plain
// mean of V.
TEST_P(PerIsa, HugeAndEqualScoresAreStable) {
  auto w = weights_for_scores({1e4f, -1e4f, 1e4f - 1.0f, -3e3f});
  for (float x : w) EXPECT_TRUE(std::isfinite(x));
  EXPECT_NEAR(w[0] + w[1] + w[2] + w[3], 1.0, 1e-6);
  // Scores near 1e4 carry float32 rounding of about 1e4·2⁻²³ ≈ 1e-3 once scaled to
  // base 2, so the difference of 1 between them is only that accurate.
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-3);
  EXPECT_NEAR(w[2], std::exp(-1.0) / (1.0 + std::exp(-1.0)), 1e-3);
  EXPECT_EQ(w[1], 0.0f);
  EXPECT_EQ(w[3], 0.0f);

  for (int T : {1, 5, 100, 1000}) {
    const int D = 16;
    std::vector<float> q(T * D, 0.25f), k(T * D, 0.5f), v(T * D), o(T * D, NAN);
    std::vector<double> mean(D, 0.0);
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d) {
        v[t * D + d] = std::sin(0.37f * t + d);
        mean[d] += v[t * D + d] / T;
      }
    AttentionParams p;
    p.q_len = p.kv_len = T;
    p.q_heads = p.kv_heads = 1;
    p.head_dim = D;
    p.causal = false;
    HW_ASSERT_OK(attention(p, packed_input(q.data(), T, 1, D), packed_input(k.data(), T, 1, D),
                          packed_input(v.data(), T, 1, D), packed_output(o.data(), T, 1, D)));
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d) EXPECT_NEAR(o[t * D + d], mean[d], 1e-5) << "T " << T;
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, PerIsa, ::testing::Values(Isa::avx512, Isa::avx2, Isa::scalar),
                         [](const ::testing::TestParamInfo<Isa>& i) { return kernels::isa_name(i.param); });

}  // namespace
}  // namespace headwise::test
