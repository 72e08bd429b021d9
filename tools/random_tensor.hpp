// Benchmark tensors: 2 MiB aligned (advised as huge pages, as a serving system would
// place its activations and KV cache), written once by the threads that will read them
// (first touch places the pages near them), with deterministic values in [-1, 1)
// hashed from the index. Shared by `headwise bench attention` and bench/attention_bench.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "runtime/huge_pages.hpp"
#include "runtime/splitmix64.hpp"

namespace headwise::tools {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using TensorBuffer = std::unique_ptr<float[], FreeDeleter>;

inline TensorBuffer random_tensor(size_t n, uint64_t seed, int threads) {
  TensorBuffer b(static_cast<float*>(alloc_maybe_huge(n * sizeof(float))));
  if (!b) return b;
  float* p = b.get();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) {
    const uint64_t z = splitmix64_mix((uint64_t(i) + seed) * kSplitmix64Gamma);
    p[i] = float(int64_t(z >> 40) - (int64_t(1) << 23)) * (1.0f / (1 << 23));
  }
  return b;
}

}  // namespace headwise::tools
