// llama2.c's sampler, step for step: the same float arithmetic and the same xorshift*
// stream, so a seed gives the same tokens as llama2.c's run.c.
#include "headwise/sampler.hpp"

#include <algorithm>
#include <cmath>

namespace headwise {

Sampler::Sampler(int vocab_size, float temperature, float top_p, uint64_t seed)
    : vocab_(vocab_size),
      // llama2.c's main clamps a negative temperature to 0 (greedy); NaN goes the same way
      // rather than turning every probability into NaN.
      temperature_(temperature > 0.0f ? temperature : 0.0f),
      top_p_(top_p),
      // A zero seed keeps xorshift at zero forever (every coin is 0): callers must pick
      // a non-zero seed, as llama2.c's CLI does.
      state_(seed) {
  if (vocab_ > 0) {
    probs_.resize(vocab_);
    candidates_.reserve(vocab_);
  }
}

// xorshift* (https://en.wikipedia.org/wiki/Xorshift#xorshift*), returning 24 random bits
// as a float in [0, 1).
float Sampler::random_f32() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  const uint32_t u = uint32_t((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  return float(u >> 8) / 16777216.0f;
}

int32_t Sampler::sample(const float* logits) {
  if (logits == nullptr || vocab_ <= 0) return -1;
  const int n = vocab_;
  if (temperature_ == 0.0f) {
    // greedy: the first maximum
    int best = 0;
    for (int i = 1; i < n; ++i)
      if (logits[i] > logits[best]) best = i;
    return best;
  }

  // p = softmax(logits / T), in float like llama2.c
  float* p = probs_.data();
  for (int i = 0; i < n; ++i) p[i] = logits[i] / temperature_;
  float max_val = p[0];
  for (int i = 1; i < n; ++i)
    if (p[i] > max_val) max_val = p[i];
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    p[i] = std::exp(p[i] - max_val);
    sum += p[i];
  }
  for (int i = 0; i < n; ++i) p[i] /= sum;

  // One coin per sample, drawn before the branch, whichever branch is taken.
  const float coin = random_f32();

  if (!(top_p_ > 0.0f && top_p_ < 1.0f)) {
    // multinomial: the first token whose running cdf exceeds the coin
    float cdf = 0.0f;
    for (int i = 0; i < n; ++i) {
      cdf += p[i];
      if (coin < cdf) return i;
    }
    return n - 1;  // the cdf fell short of the coin by rounding
  }

  // top-p: tokens below (1 - top_p) / (n - 1) can never be in the nucleus, so drop them
  // before sorting (llama2.c's shortcut; it changes nothing but speed).
  candidates_.clear();
  const float cutoff = (1.0f - top_p_) / float(n - 1);
  for (int i = 0; i < n; ++i)
    if (p[i] >= cutoff) candidates_.emplace_back(p[i], int32_t(i));
  if (candidates_.empty()) {
    // Only when llama2.c would read out of bounds: a single-token vocabulary (cutoff is
    // inf) or a near-uniform distribution with top_p < 1/n. The nucleus is then the top
    // token alone.
    int best = 0;
    for (int i = 1; i < n; ++i)
      if (p[i] > p[best]) best = i;
    return best;
  }
  // Descending probability; stable, as glibc's merge-sort qsort is, so equal
  // probabilities keep index order.
  std::stable_sort(candidates_.begin(), candidates_.end(),
                   [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
                     return a.first > b.first;
                   });
  const int n0 = int(candidates_.size());
  // The nucleus ends at the first token that takes the cumulative probability past top_p.
  float cumulative = 0.0f;
  int last = n0 - 1;
  for (int i = 0; i < n0; ++i) {
    cumulative += candidates_[i].first;
    if (cumulative > top_p_) {
      last = i;
      break;
    }
  }
  // Sample within the nucleus, rescaling the coin instead of renormalising.
  const float r = coin * cumulative;
  float cdf = 0.0f;
  for (int i = 0; i <= last; ++i) {
    cdf += candidates_[i].first;
    if (r < cdf) return candidates_[i].second;
  }
  return candidates_[last].second;  // rounding
}

}  // namespace headwise
