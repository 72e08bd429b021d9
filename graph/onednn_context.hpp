// What every oneDNN caller of the graph shares: the one CPU engine, and the OpenMP
// thread count a call runs with.
#pragma once

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace headwise::graph {

inline dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// Sets the calling thread's OpenMP max-threads for oneDNN and restores it on exit, so
// callers never see their setting changed.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int n) : saved_(omp_get_max_threads()) {
    if (n != saved_) omp_set_num_threads(n);
  }
  ~ScopedOmpThreads() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int saved_;
};

}  // namespace headwise::graph
