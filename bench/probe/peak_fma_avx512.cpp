// avx512 probe kernels: FMA throughput and streaming read rate.
#include "bench/probe/probe.hpp"
#include "bench/probe/probe_impl.hpp"

namespace headwise::kernels {

double fma_probe_avx512(int64_t iters, float* sink) {
  return fma_probe<xsimd::avx512bw>(iters, sink);
}

float read_probe_avx512(const float* p, size_t n) {
  return read_probe<xsimd::avx512bw>(p, n);
}

}  // namespace headwise::kernels
