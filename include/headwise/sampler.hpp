// Choosing the next token from logits: greedy at temperature 0; otherwise softmax of
// logits/temperature sampled with a seeded xorshift generator, optionally restricted
// to the top-p nucleus. Same algorithm and random stream as llama2.c's sampler, so a
// given seed reproduces exactly.
#pragma once

#include <cstdint>
#include <vector>

namespace headwise {

class Sampler {
 public:
  // temperature >= 0 (0, negative or NaN: greedy); top_p in (0, 1) restricts to the
  // nucleus, anything else samples the whole distribution. seed must not be 0 (xorshift
  // would stay at 0).
  Sampler(int vocab_size, float temperature, float top_p, uint64_t seed);

  // logits: vocab_size floats (not modified). -1 only for null logits or vocab_size < 1.
  int32_t sample(const float* logits);

 private:
  int vocab_;
  float temperature_, top_p_;
  uint64_t state_;
  std::vector<float> probs_;
  std::vector<std::pair<float, int32_t>> candidates_;
  float random_f32();
};

}  // namespace headwise
