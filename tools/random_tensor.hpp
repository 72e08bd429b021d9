// Benchmark tensors: 2 MiB aligned (advised as huge pages, as a serving system would
// place its activations and KV cache), written once by the threads that will read them
// (first touch places the pages near them), with deterministic values in [-1, 1)
// hashed from the index. Shared by `headwise bench attention` and bench/attention_bench.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace headwise::tools {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using TensorBuffer = std::unique_ptr<float[], FreeDeleter>;

inline TensorBuffer random_tensor(size_t n, uint64_t seed, int threads) {
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t bytes = (n * sizeof(float) + kHuge - 1) / kHuge * kHuge;
  TensorBuffer b(static_cast<float*>(std::aligned_alloc(kHuge, bytes ? bytes : kHuge)));
  if (!b) return b;
  madvise(b.get(), bytes, MADV_HUGEPAGE);  // advice only: ignored where THP is off
  float* p = b.get();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) {
    uint64_t z = (uint64_t(i) + seed) * 0x9E3779B97F4A7C15ull;  // splitmix64 finaliser
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    p[i] = float(int64_t(z >> 40) - (int64_t(1) << 23)) * (1.0f / (1 << 23));
  }
  return b;
}

}  // namespace headwise::tools
