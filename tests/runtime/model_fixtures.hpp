// Models and inputs the runtime and analysis tests share: the synthetic models (seeded
// random weights, always there), stories260K from the shared folder (null when the folder
// is absent: the caller skips), seeded random prompts and the max-abs metric.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "headwise/model.hpp"

namespace headwise::test {

// A model of Model::synthetic_names() with weights of seed 7.
inline std::shared_ptr<const Model> synthetic_model(const char* name) {
  std::shared_ptr<const Model> m;
  const Status s = Model::synthetic(name, 7, &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

inline std::shared_ptr<const Model> tiny() { return synthetic_model("tiny"); }

inline const std::string& stories_dir() {
  static const std::string dir = std::string(HEADWISE_SHARED_DIR) + "/models/stories260K/";
  return dir;
}

// stories260K with its tokenizer, or null when the shared folder does not have it.
inline std::shared_ptr<const Model> stories() {
  if (!std::ifstream(stories_dir() + "stories260K.bin")) return nullptr;
  ModelOptions o;
  o.tokenizer = stories_dir() + "tok512.bin";
  std::shared_ptr<const Model> m;
  const Status s = Model::load(stories_dir() + "stories260K.bin", o, &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

// n seeded token ids in [0, vocab), the first one BOS (1).
inline std::vector<int32_t> random_tokens(int n, int vocab, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(g() % vocab);
  t[0] = 1;
  return t;
}

inline double max_abs(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m;
}

}  // namespace headwise::test
