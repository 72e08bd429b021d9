// graph::parallel_run: a spinning team of threads per thread count (see team.hpp).
#include "graph/team.hpp"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <pthread.h>
#endif

namespace headwise::graph {
namespace {

inline void relax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// How long a worker spins for the next job before it sleeps: a decode step's parts
// come microseconds apart, and its steps tens of microseconds apart.
constexpr int kSpinMicros = 200;

class Team {
 public:
  explicit Team(int n) : n_(n), done_(new Slot[n]) {
    for (int t = 1; t < n; ++t) threads_.emplace_back([this, t] { work(t); });
  }
  ~Team() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_.store(true, std::memory_order_seq_cst);
      cv_.notify_all();
    }
    for (std::thread& th : threads_) th.join();
  }
  int size() const { return n_; }
  std::mutex& busy() { return busy_; }

  // On the calling thread (t = 0), with busy() held.
  void run(void (*fn)(void*, int, int), void* ctx) {
    fn_ = fn;
    ctx_ = ctx;
    const uint64_t g = gen_.load(std::memory_order_relaxed) + 1;
    gen_.store(g, std::memory_order_seq_cst);  // publishes fn_, ctx_
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lk(m_);
      cv_.notify_all();
    }
    fn(ctx, 0, n_);
    for (int t = 1; t < n_; ++t)
      while (done_[t].gen.load(std::memory_order_acquire) != g) relax();
  }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> gen{0};
  };

  void work(int t) {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), "hw-team");  // told apart from OpenMP's workers
#endif
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = wait_for_job(seen);
      if (g == 0) return;  // stopping
      seen = g;
      fn_(ctx_, t, n_);  // read after the acquire of gen_ in wait_for_job
      done_[t].gen.store(g, std::memory_order_release);
    }
  }

  // The next generation after `seen`, or 0 when the team stops.
  uint64_t wait_for_job(uint64_t seen) {
    using Clock = std::chrono::steady_clock;
    const auto until = Clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int i = 0;; ++i) {
      const uint64_t g = gen_.load(std::memory_order_acquire);
      if (g != seen) return g;
      if (stop_.load(std::memory_order_relaxed)) return 0;
      relax();
      if ((i & 255) == 255 && Clock::now() > until) break;
    }
    // Sleep. The caller bumps gen_ then reads sleepers_ (both seq_cst); this thread
    // counts itself in sleepers_ then reads gen_ under the mutex: one of the two sees
    // the other's write, so a job is never missed.
    std::unique_lock<std::mutex> lk(m_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    cv_.wait(lk, [&] { return gen_.load(std::memory_order_seq_cst) != seen || stop_.load(); });
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    return stop_.load() ? 0 : gen_.load(std::memory_order_acquire);
  }

  const int n_;
  std::unique_ptr<Slot[]> done_;
  std::vector<std::thread> threads_;
  alignas(64) std::atomic<uint64_t> gen_{0};
  void (*fn_)(void*, int, int) = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex m_;
  std::condition_variable cv_;
  std::mutex busy_;  // one caller at a time
};

// A child of fork() has the parent's teams without their threads, and libgomp's pool
// is as broken there: it runs the n shares one after the other on the calling thread.
std::atomic<bool> forked{false};

// The process's teams, by size; never destroyed before exit.
Team* team_of(int n) {
  static std::mutex m;
  static std::map<int, std::unique_ptr<Team>>* teams = new std::map<int, std::unique_ptr<Team>>();
#if defined(__linux__)
  static const int registered = pthread_atfork(nullptr, nullptr, [] { forked.store(true); });
  (void)registered;
#endif
  std::lock_guard<std::mutex> lk(m);
  auto& slot = (*teams)[n];
  if (!slot) slot = std::make_unique<Team>(n);
  return slot.get();
}

}  // namespace

void parallel_run(int n, void (*fn)(void*, int, int), void* ctx) {
  if (n <= 1) return fn(ctx, 0, 1);
  if (forked.load(std::memory_order_relaxed)) {
    for (int t = 0; t < n; ++t) fn(ctx, t, n);
    return;
  }
  // More threads than cores: OpenMP, whose waits back off when oversubscribed (a
  // spinning worker here could hold a core the others need for its whole time slice).
  static const int procs = omp_get_num_procs();
  if (n <= procs && !omp_in_parallel()) {
    Team* team = team_of(n);
    std::unique_lock<std::mutex> lk(team->busy(), std::try_to_lock);
    if (lk.owns_lock()) return team->run(fn, ctx);
  }
#pragma omp parallel num_threads(n)
  fn(ctx, omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace headwise::graph
