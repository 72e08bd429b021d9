// Head roles (analysis/head_roles.cpp): each score on hand-built weight matrices whose
// values are worked out here, the role rule at its edges, the induction sequence, and
// on stories260K a role table that does not depend on thread count or ISA.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "graph/plan.hpp"
#include "kernels/dispatch.hpp"
#include "headwise/analysis/attention_maps.hpp"
#include "headwise/analysis/head_roles.hpp"
#include "tests/status_assert.hpp"

namespace headwise::test {
namespace {

using Matrix = std::vector<float>;  // (T, T) row-major

// Row i puts weight 1 on key f(i).
Matrix one_hot(int T, int (*f)(int)) {
  Matrix w(size_t(T) * T, 0.0f);
  for (int i = 0; i < T; ++i) w[size_t(i) * T + f(i)] = 1;
  return w;
}

TEST(HeadRoles, PurePreviousTokenHead) {
  constexpr int T = 8;
  const Matrix w = one_hot(T, [](int i) { return i > 0 ? i - 1 : 0; });
  EXPECT_EQ(previous_token_score(w.data(), T), 1.0);
  EXPECT_DOUBLE_EQ(sink_score(w.data(), T), 1.0 / 7);  // row 1's previous token is position 0
  EXPECT_EQ(local_score(w.data(), T), 1.0);
  EXPECT_EQ(mean_entropy(w.data(), T), 0.0);
  HeadScores s{previous_token_score(w.data(), T), sink_score(w.data(), T), local_score(w.data(), T), 0, 0};
  EXPECT_EQ(dominant_role(s), "previous-token");
}

TEST(HeadRoles, PureSinkHead) {
  constexpr int T = 8;
  const Matrix w = one_hot(T, [](int) { return 0; });
  EXPECT_DOUBLE_EQ(previous_token_score(w.data(), T), 1.0 / 7);
  EXPECT_EQ(sink_score(w.data(), T), 1.0);
  EXPECT_DOUBLE_EQ(local_score(w.data(), T), 3.0 / 7);  // rows 1..3 reach position 0
  EXPECT_EQ(mean_entropy(w.data(), T), 0.0);
  HeadScores s{1.0 / 7, 1.0, 3.0 / 7, 0, 0.02};
  EXPECT_EQ(dominant_role(s), "sink");
}

TEST(HeadRoles, UniformCausalHead) {
  // Long enough that the 4-key window holds a minority of the weight (at T = 8 a
  // uniform head is honestly mostly local).
  constexpr int T = 32;
  Matrix w(T * T, 0.0f);
  double prev = 0, local = 0, entropy = 0;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) w[i * T + j] = 1.0f / (i + 1);
  for (int i = 1; i < T; ++i) {
    prev += double(1.0f / (i + 1)) / (T - 1);
    local += std::min(i + 1, 4) * double(1.0f / (i + 1)) / (T - 1);
    entropy += -(i + 1) * double(1.0f / (i + 1)) * std::log(double(1.0f / (i + 1))) / (T - 1);
  }
  EXPECT_NEAR(previous_token_score(w.data(), T), prev, 1e-12);
  EXPECT_NEAR(sink_score(w.data(), T), prev, 1e-12);
  EXPECT_NEAR(local_score(w.data(), T), local, 1e-12);
  EXPECT_NEAR(mean_entropy(w.data(), T), entropy, 1e-12);
  // ln 2 .. ln 32 averaged = ln(32!) / 31, to float precision
  EXPECT_NEAR(mean_entropy(w.data(), T), std::lgamma(33.0) / 31, 1e-5);
  HeadScores s{prev, prev, local, entropy, 0};
  EXPECT_EQ(dominant_role(s), "mixed");
}

TEST(HeadRoles, LocalWindowHead) {
  constexpr int T = 8;
  Matrix w(T * T, 0.0f);
  for (int i = 0; i < T; ++i)
    for (int j = std::max(0, i - kLocalWindow); j <= i; ++j) w[i * T + j] = 1.0f / std::min(i + 1, 4);
  // rows 1..7 have windows of 2, 3, 4, 4, 4, 4, 4 keys
  const double prev = (0.5 + double(1.0f / 3) + 5 * 0.25) / 7;
  EXPECT_NEAR(previous_token_score(w.data(), T), prev, 1e-12);
  EXPECT_NEAR(local_score(w.data(), T), 1.0, 1e-6);
  EXPECT_NEAR(mean_entropy(w.data(), T), (std::log(2.0) + std::log(3.0) + 5 * std::log(4.0)) / 7, 1e-6);
  HeadScores s{prev, sink_score(w.data(), T), local_score(w.data(), T), 0, 0};
  EXPECT_EQ(dominant_role(s), "local");
}

TEST(HeadRoles, InductionPattern) {
  constexpr int L = 5, T = 2 * L + 1;
  // Second-copy query 1+L+j looks at 2+j (the token after r_j's first occurrence);
  // everything else looks at BOS.
  const Matrix ind = one_hot(T, [](int i) { return i >= 1 + L ? i - L + 1 : 0; });
  EXPECT_EQ(induction_score(ind.data(), T, L), 1.0);
  // A duplicate-token head (looks at the earlier occurrence itself) is not induction.
  const Matrix dup = one_hot(T, [](int i) { return i >= 1 + L ? i - L : 0; });
  EXPECT_EQ(induction_score(dup.data(), T, L), 0.0);
  // Half the second copy right: 0.4 when j = 0, 2 hit.
  const Matrix part = one_hot(T, [](int i) { return i == 1 + L || i == 3 + L ? i - L + 1 : 0; });
  EXPECT_DOUBLE_EQ(induction_score(part.data(), T, L), 0.4);
  EXPECT_TRUE(std::isnan(induction_score(ind.data(), T, L + 1)));
  EXPECT_EQ(dominant_role({0.1, 0.3, 0.2, 1.0, 0.9}), "induction");
}

TEST(HeadRoles, RoleRuleEdges) {
  // {prev, sink, local, entropy, induction}
  EXPECT_EQ(dominant_role({0.6, 0.39, 0.6, 0, 0}), "previous-token");
  EXPECT_EQ(dominant_role({0.6, 0.41, 0.6, 0, 0}), "mixed");     // not 1.5× the sink score
  EXPECT_EQ(dominant_role({0.49, 0.0, 0.49, 0, 0}), "mixed");    // below 0.5
  EXPECT_EQ(dominant_role({0.9, 0.0, 1.0, 0, 0}), "previous-token");  // local beyond prev: 0.1
  EXPECT_EQ(dominant_role({0.2, 0.1, 0.9, 0, 0.3}), "local");    // 0.7 vs 0.3 and 0.2
  EXPECT_EQ(dominant_role({0.2, 0.1, 0.9, 0, 0.5}), "mixed");    // 0.7 < 1.5 × 0.5
  EXPECT_EQ(dominant_role({NAN, 0, 0, 0, 0}), "mixed");
}

std::shared_ptr<const Model> tiny() {
  std::shared_ptr<const Model> m;
  HW_EXPECT_OK(Model::synthetic("tiny", 3, &m));
  return m;
}

TEST(HeadRoles, InductionTokens) {
  const auto m = tiny();
  std::vector<int32_t> a, b, c;
  HW_ASSERT_OK(induction_tokens(*m, 20, 5, &a));
  HW_ASSERT_OK(induction_tokens(*m, 20, 5, &b));
  HW_ASSERT_OK(induction_tokens(*m, 20, 6, &c));
  ASSERT_EQ(a.size(), 41u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a[0], Tokenizer::kBos);
  std::set<int32_t> seen;
  for (int j = 0; j < 20; ++j) {
    EXPECT_EQ(a[1 + j], a[21 + j]);
    EXPECT_GE(a[1 + j], 259) << "a special or byte-fallback id";
    seen.insert(a[1 + j]);
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(induction_tokens(*m, 0, 5, &a).code(), StatusCode::invalid_argument);
  EXPECT_EQ(induction_tokens(*m, 10000, 5, &a).code(), StatusCode::invalid_argument);
}

TEST(HeadRoles, AblationStudyIndexesHeadsAndLayers) {
  const auto m = tiny();
  const std::vector<int32_t> ids = m->tokenizer()->encode("some text to predict", true);
  Ablation a;
  HW_ASSERT_OK(ablation_study(*m, ids, 1, &a));
  double base = 0, loss = 0;
  HW_ASSERT_OK(next_token_loss(*m, ids, AttentionHook(), 1, &base));
  EXPECT_EQ(a.baseline_loss, base);
  ASSERT_EQ(a.head.size(), 2u);
  ASSERT_EQ(a.layer.size(), 2u);
  HW_ASSERT_OK(ablated_loss(*m, ids, 1, 3, 1, &loss));
  EXPECT_EQ(a.head[1][3], loss - base);
  HW_ASSERT_OK(ablated_loss(*m, ids, 0, -1, 1, &loss));
  EXPECT_EQ(a.layer[0], loss - base);
}

const std::string kStories = HEADWISE_SHARED_DIR "/models/stories260K/";

TEST(HeadRoles, Stories260KTableIndependentOfThreadsAndIsa) {
  std::FILE* f = std::fopen((kStories + "stories260K.bin").c_str(), "rb");
  if (!f) GTEST_SKIP() << kStories << " is absent";
  std::fclose(f);
  std::shared_ptr<const Model> m;
  ModelOptions o;
  o.tokenizer = kStories + "tok512.bin";
  HW_ASSERT_OK(Model::load(kStories + "stories260K.bin", o, &m));
  const std::vector<int32_t> text = m->tokenizer()->encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.",
      true);
  auto table = [&](int threads) {
    RoleOptions ro;
    ro.threads = threads;
    RoleTable t;
    const Status s = head_roles(*m, text, ro, &t);
    EXPECT_TRUE(s.ok()) << s.message();
    return t;
  };
  const RoleTable base = table(1);
  ASSERT_EQ(base.heads.size(), 40u);
  // A trained model has specialised heads: at least one clears the role rule.
  int roles = 0;
  for (const HeadRole& r : base.heads) roles += r.role != "mixed";
  EXPECT_GT(roles, 0);
  auto same = [&](const RoleTable& t, const std::string& what) {
    ASSERT_EQ(t.heads.size(), base.heads.size()) << what;
    for (size_t i = 0; i < t.heads.size(); ++i) {
      const HeadScores &a = base.heads[i].scores, &b = t.heads[i].scores;
      SCOPED_TRACE(what + ", layer " + std::to_string(t.heads[i].layer) + " head " +
                   std::to_string(t.heads[i].head));
      EXPECT_NEAR(a.prev_token, b.prev_token, 1e-6);
      EXPECT_NEAR(a.sink, b.sink, 1e-6);
      EXPECT_NEAR(a.local, b.local, 1e-6);
      EXPECT_NEAR(a.entropy, b.entropy, 1e-6);
      EXPECT_NEAR(a.induction, b.induction, 1e-6);
      EXPECT_EQ(base.heads[i].role, t.heads[i].role);
    }
  };
  same(table(2), "2 threads");
  // Every ISA the CPU has: a model loaded while the override is set has a plan of that
  // ISA (the override affects plans built afterwards, never a running one).
  int isas = 0;
  for (kernels::Isa isa : {kernels::Isa::scalar, kernels::Isa::avx2, kernels::Isa::avx512}) {
    if (!kernels::set_isa_override(isa)) continue;
    const Status s = Model::load(kStories + "stories260K.bin", o, &m);
    kernels::clear_isa_override();
    HW_ASSERT_OK(s);
    ASSERT_EQ(m->plan().isa, isa);
    ++isas;
    same(table(1), kernels::isa_name(isa));
  }
  EXPECT_GE(isas, 1);
}

}  // namespace
}  // namespace headwise::test
