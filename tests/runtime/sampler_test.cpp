// Sampler (runtime/sampler.cpp): greedy choice, the xorshift* stream (numbers worked out
// outside C++), draw-for-draw agreement with a llama2.c-style oracle written here, and
// the statistics of multinomial and top-p sampling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "headwise/sampler.hpp"

namespace headwise::test {
namespace {

// xorshift* as in llama2.c, for the oracle's coins.
struct Rng {
  uint64_t s;
  uint32_t u32() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return uint32_t((s * 0x2545F4914F6CDD1Dull) >> 32);
  }
  float f32() { return (u32() >> 8) / 16777216.0f; }
};

TEST(Sampler, GreedyPicksFirstMaximum) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
  Sampler s(5, 0.0f, 0.9f, 42);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s.sample(logits.data()), 1);
  Sampler neg(5, -1.0f, 0.9f, 42);  // negative temperature is greedy, as in llama2.c
  EXPECT_EQ(neg.sample(logits.data()), 1);
  const std::vector<float> last = {-5.0f, -4.0f, -3.0f};
  Sampler s3(3, 0.0f, 1.0f, 7);
  EXPECT_EQ(s3.sample(last.data()), 2);
}

// With 65536 equal logits every probability is exactly 2^-16 and the running cdf
// (i+1)·2^-16 is exact, so the multinomial draw is coin·2^16 rounded down, i.e. the top
// 16 bits of random_u32: sample() exposes the raw stream.
TEST(Sampler, XorshiftStreamForSeed42) {
  constexpr int n = 1 << 16;
  const std::vector<float> logits(n, 0.0f);
  Sampler s(n, 1.0f, 1.0f, 42);
  // random_u32() for seed 42 is 0x56ce4ab7, 0xc841eb53, 0xca466be0, 0xf1acc733,
  // 0xc3af4dd7, 0xd5f30c22 (computed with Python integers); their top 16 bits:
  const int32_t want[] = {0x56ce, 0xc841, 0xca46, 0xf1ac, 0xc3af, 0xd5f3};
  for (int32_t w : want) EXPECT_EQ(s.sample(logits.data()), w);
  // ...and onward, against plain 64-bit arithmetic.
  Rng rng{42};
  for (size_t i = 0; i < std::size(want); ++i) rng.u32();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(s.sample(logits.data()), int32_t(rng.u32() >> 16)) << i;
}

std::vector<float> random_logits(int n, unsigned seed, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

TEST(Sampler, SameSeedSameDrawsOtherSeedOtherDraws) {
  const std::vector<float> logits = random_logits(512, 3, 1.0f);
  for (float top_p : {1.0f, 0.9f}) {
    Sampler a(512, 1.0f, top_p, 1234), b(512, 1.0f, top_p, 1234), c(512, 1.0f, top_p, 1235);
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < 1000; ++i) {
      const int32_t x = a.sample(logits.data()), y = b.sample(logits.data()),
                    z = c.sample(logits.data());
      same_ab += x == y;
      same_ac += x == z;
    }
    EXPECT_EQ(same_ab, 1000) << top_p;
    // Near-flat over 512 tokens: independent streams rarely agree.
    EXPECT_LT(same_ac, 100) << top_p;
  }
}

// llama2.c's sample / sample_mult / sample_topp, written out again as the oracle.
struct ProbIndex {
  float prob;
  int index;
};
int compare_desc(const void* a, const void* b) {
  const float pa = static_cast<const ProbIndex*>(a)->prob, pb = static_cast<const ProbIndex*>(b)->prob;
  return pa > pb ? -1 : pa < pb ? 1 : 0;
}
int oracle(std::vector<float> x, float temperature, float topp, Rng* rng) {
  const int n = int(x.size());
  for (float& v : x) v /= temperature;
  float mx = x[0];
  for (float v : x) mx = v > mx ? v : mx;
  float sum = 0.0f;
  for (float& v : x) {
    v = expf(v - mx);
    sum += v;
  }
  for (float& v : x) v /= sum;
  const float coin = rng->f32();
  if (topp <= 0 || topp >= 1) {
    float cdf = 0.0f;
    for (int i = 0; i < n; i++) {
      cdf += x[i];
      if (coin < cdf) return i;
    }
    return n - 1;
  }
  std::vector<ProbIndex> pi;
  const float cutoff = (1.0f - topp) / (n - 1);
  for (int i = 0; i < n; i++)
    if (x[i] >= cutoff) pi.push_back({x[i], i});
  std::qsort(pi.data(), pi.size(), sizeof(ProbIndex), compare_desc);
  float cum = 0.0f;
  int last = int(pi.size()) - 1;
  for (int i = 0; i < int(pi.size()); i++) {
    cum += pi[i].prob;
    if (cum > topp) {
      last = i;
      break;
    }
  }
  const float r = coin * cum;
  float cdf = 0.0f;
  for (int i = 0; i <= last; i++) {
    cdf += pi[i].prob;
    if (r < cdf) return pi[i].index;
  }
  return pi[last].index;
}

TEST(Sampler, DrawForDrawLikeLlama2c) {
  int distinct_total = 0;
  for (float temperature : {0.3f, 1.0f, 1.7f})
    for (float top_p : {0.0f, 0.5f, 0.9f, 0.99f, 1.0f}) {
      const std::vector<float> logits = random_logits(512, 11, 3.0f);
      Sampler s(512, temperature, top_p, 987654321);
      Rng rng{987654321};
      std::vector<bool> seen(512, false);
      for (int i = 0; i < 1000; ++i) {
        const int32_t got = s.sample(logits.data());
        ASSERT_EQ(got, oracle(logits, temperature, top_p, &rng))
            << "T=" << temperature << " top_p=" << top_p << " draw " << i;
        seen[got] = true;
      }
      for (bool b : seen) distinct_total += b;
    }
  // The draws were not degenerate (at T=0.3, top_p 0.5 the nucleus is one token).
  EXPECT_GT(distinct_total, 100);
}

// Frequencies over 200k draws against softmax(logits/T) in double: the standard error
// is at most 0.0012, so 1% absolute is a >8σ bound.
std::vector<double> frequencies(const std::vector<float>& logits, float t, float top_p,
                                uint64_t seed, int draws) {
  Sampler s(int(logits.size()), t, top_p, seed);
  std::vector<int> count(logits.size(), 0);
  for (int i = 0; i < draws; ++i) {
    const int32_t k = s.sample(logits.data());
    EXPECT_GE(k, 0);
    EXPECT_LT(k, int32_t(logits.size()));
    if (k >= 0 && k < int32_t(logits.size())) ++count[k];
  }
  std::vector<double> f;
  for (int c : count) f.push_back(double(c) / draws);
  return f;
}
std::vector<double> softmax(const std::vector<float>& logits, double t) {
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] / t);
  for (double& v : p) v /= sum;
  return p;
}

TEST(Sampler, MultinomialMatchesSoftmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 1.5f};
  for (float t : {1.0f, 0.7f, 2.0f})
    for (float top_p : {1.0f, 0.0f}) {  // both mean "no nucleus"
      const std::vector<double> want = softmax(logits, t);
      const std::vector<double> got = frequencies(logits, t, top_p, 20240601, 200000);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 0.01) << "token " << i << " T=" << t << " top_p=" << top_p;
    }
}

TEST(Sampler, TopPDrawsOnlyFromTheNucleus) {
  // p ≈ {0.05, 0.10, 0.20, 0.60, 0.05}: the top token is not first, so the sort matters.
  const std::vector<double> p = {0.05, 0.10, 0.20, 0.60, 0.05};
  std::vector<float> logits;
  for (double v : p) logits.push_back(float(std::log(v)));

  // top_p 0.5: the 0.6 token alone passes it.
  std::vector<double> f = frequencies(logits, 1.0f, 0.5f, 77, 20000);
  EXPECT_EQ(f[3], 1.0);

  // top_p 0.7: {0.6, 0.2}, drawn 3:1; the others never.
  f = frequencies(logits, 1.0f, 0.7f, 78, 200000);
  EXPECT_EQ(f[0] + f[1] + f[4], 0.0);
  EXPECT_NEAR(f[3], 0.75, 0.01);
  EXPECT_NEAR(f[2], 0.25, 0.01);

  // top_p 0.85: 0.6 + 0.2 = 0.8 does not pass it, the 0.10 token joins.
  f = frequencies(logits, 1.0f, 0.85f, 79, 200000);
  EXPECT_EQ(f[0] + f[4], 0.0);
  EXPECT_NEAR(f[3], 0.6 / 0.9, 0.01);
  EXPECT_NEAR(f[2], 0.2 / 0.9, 0.01);
  EXPECT_NEAR(f[1], 0.1 / 0.9, 0.01);
}

TEST(Sampler, DegenerateInputsDoNotReadOutOfBounds) {
  const float one = 0.3f;
  Sampler single(1, 1.0f, 0.9f, 5);  // cutoff (1 - 0.9) / 0 is inf: no candidates
  EXPECT_EQ(single.sample(&one), 0);
  Sampler single_mult(1, 1.0f, 1.0f, 5);
  EXPECT_EQ(single_mult.sample(&one), 0);
  // uniform over 100 with top_p 0.005 < 1/100: every p is below the cutoff
  const std::vector<float> flat(100, 0.0f);
  Sampler tiny(100, 1.0f, 0.005f, 5);
  EXPECT_EQ(tiny.sample(flat.data()), 0);
  Sampler s(4, 1.0f, 0.9f, 5);
  EXPECT_EQ(s.sample(nullptr), -1);
}

}  // namespace
}  // namespace headwise::test
