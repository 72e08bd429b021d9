// avx2 probe kernels: FMA throughput and streaming read rate.
#include "bench/probe/probe.hpp"
#include "bench/probe/probe_impl.hpp"

namespace headwise::kernels {

double fma_probe_avx2(int64_t iters, float* sink) {
  return fma_probe<xsimd::fma3<xsimd::avx2>>(iters, sink);
}

float read_probe_avx2(const float* p, size_t n) {
  return read_probe<xsimd::fma3<xsimd::avx2>>(p, n);
}

}  // namespace headwise::kernels
