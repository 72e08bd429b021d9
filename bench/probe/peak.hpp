// This machine's limits, measured now: fp32 FMA throughput per ISA (1 and N threads)
// and the rate of reading memory. Benchmarks print their results as a share of these,
// so "% of peak" always means the machine the numbers were taken on.
#pragma once

#include <string>

namespace headwise {

struct MachinePeak {
  int threads = 1;
  // GFLOP/s of fp32 FMA (2 flops each); 0 when the CPU lacks the ISA.
  double fma_avx512_1t = 0, fma_avx512_nt = 0;
  double fma_avx2_1t = 0, fma_avx2_nt = 0;
  // GFLOP/s of the bf16 dot product (vdpbf16ps) and GOP/s of the int8 one (vpdpbusd),
  // 2 per multiply-add: the ceilings of BF16 and int8-quantized prefill; 0 when the
  // CPU lacks AVX512-BF16 / AVX512-VNNI.
  double dot_bf16_1t = 0, dot_bf16_nt = 0;
  double dot_int8_1t = 0, dot_int8_nt = 0;
  // GFLOP/s of AMX's bf16 tile product (TDPBF16PS), the ceiling of the prefill
  // projections on the AMX panels; 0 where kernels::amx_usable() is false.
  double tile_bf16_1t = 0, tile_bf16_nt = 0;
  // GOP/s of AVX2's int8 multiply (vpmaddubsw), the ceiling of the integer types' avx2
  // kernels; 0 without AVX2.
  double dot_int8_avx2_1t = 0, dot_int8_avx2_nt = 0;
  // GB/s reading a buffer far larger than the caches.
  double read_1t = 0, read_nt = 0;

  // The FMA peak for an ISA name ("avx512" | "avx2" | "scalar") at 1 or `threads`
  // threads. Scalar code is measured against the AVX2 peak (what the CPU could do).
  double fma_gflops(const std::string& isa, int nthreads) const;
  double read_gbs(int nthreads) const { return nthreads <= 1 ? read_1t : read_nt; }
  std::string summary() const;
};

// The read-bandwidth probe on its own, keeping its buffer (256 MiB, far beyond the last
// cache level) between measurements, so a benchmark can measure the bandwidth right next
// to each of its runs: on a shared host it drifts by tens of percent over seconds, and a
// ratio is only meaningful against the bandwidth of the same moment.
class ReadProbe {
 public:
  explicit ReadProbe(int threads = 0);
  ~ReadProbe();
  ReadProbe(const ReadProbe&) = delete;
  ReadProbe& operator=(const ReadProbe&) = delete;
  // GB/s: the best of `passes` passes after one that warms the TLBs; 0 when the
  // buffer could not be allocated or the CPU lacks AVX2.
  double gbs(int passes = 8);
  size_t bytes() const { return floats_ * sizeof(float); }

 private:
  int threads_;
  float* buf_ = nullptr;
  size_t floats_ = 0;
};

// Measures the probes with `threads` OpenMP threads (0 = all). Takes about
// 12 × seconds_per_probe; each probe reports its best of several runs.
MachinePeak measure_peak(int threads = 0, double seconds_per_probe = 0.1);

}  // namespace headwise
