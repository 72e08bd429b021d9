// y(M×N) = x(M×K) · Wᵀ (+ b) through oneDNN's matmul, the one place headwise calls the
// vendor GEMM. Primitive descriptor vs primitive, oneDNN-style: the weights are
// reordered ONCE (at model load) into the blocked layout oneDNN prefers for them, and
// a primitive is created once per (M, row strides) and cached; executing is all that
// happens per call. Safe to run concurrently from many threads: each call brings its
// own scratchpad (oneDNN's user scratchpad mode) and the cache is locked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "headwise/status.hpp"

namespace headwise::kernels {

// Per-caller scratch (grown on demand, reused across calls): oneDNN's scratchpad, and
// dense staging rows for strided inputs/outputs.
struct LinearScratch {
  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t size = 0;
    char* get(size_t n);
  };
  Buffer pad, staging;
};

class PackedLinear {
 public:
  // W is K×N logically; element (k, n) is at w[k·stride_k + n·stride_n] (so a [N][K]
  // row-major weight, PyTorch's Linear, has stride_k = 1, stride_n = K). bias: N floats
  // or null. The weights are copied (reordered); w may be released afterwards.
  static Status create(const float* w, int K, int N, int64_t stride_k, int64_t stride_n,
                       const float* bias, std::unique_ptr<PackedLinear>* out);
  ~PackedLinear();

  // y = x·W (+ b) for M rows; x rows are ldx floats apart, y rows ldy apart.
  // `threads` OpenMP threads (0 = all). Returns a Status only for oneDNN failures.
  Status run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
             LinearScratch* scratch) const;

  int K() const { return K_; }
  int N() const { return N_; }
  size_t weight_bytes() const;
  // oneDNN's name for the implementation it picked for M rows (for --verbose / tests).
  std::string implementation(int M) const;

 private:
  struct Impl;
  struct Prim;
  PackedLinear() = default;
  const Prim* primitive(int M, int64_t ldx, int64_t ldy) const;
  int K_ = 0, N_ = 0;
  std::unique_ptr<Impl> impl_;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<int, int64_t, int64_t>, std::shared_ptr<Prim>> prims_;
};

}  // namespace headwise::kernels
