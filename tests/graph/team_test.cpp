// graph::parallel_run (graph/team.cpp): fn(t, n) runs once for each t of n and all have
// returned when the call returns — back to back (the workers spinning), after pauses
// longer than their spin (asleep, woken by the next job), from several caller threads
// at once (one has the team, the others an OpenMP region), from inside a job, inside
// an OpenMP region, in a child of fork() and for more threads than cores. Suite "Concurrency": the
// ThreadSanitizer run (tests/runtime/run_tsan.sh) runs the team's own cases.
#include <gtest/gtest.h>
#include <omp.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "graph/team.hpp"

namespace headwise::graph {
namespace {

// Under ThreadSanitizer only the team's own threads: libgomp is not instrumented, so
// TSan cannot see an OpenMP region's synchronisation (run_tsan.sh) and would report the
// fallback paths' writes as races.
#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif

// Runs one job of n threads whose thread t adds t + 1 to slot t (each slot written by
// its own thread only); true when every slot got exactly its share and n was as asked
// (or the team size OpenMP gave, which is at most n).
bool one_job(int n, std::vector<long>* slots) {
  std::atomic<int> calls{0}, seen_n{0};
  parallel_run(n, [&](int t, int k) {
    (*slots)[t] += t + 1;
    seen_n.store(k);
    calls.fetch_add(1);
  });
  return calls.load() == seen_n.load() && seen_n.load() >= 1 && seen_n.load() <= n;
}

TEST(Concurrency, ParallelRunCallsEachThreadOnceBackToBackAndAfterSleeping) {
  for (int n : {1, 2, 3}) {
    if (kTsan && n > omp_get_num_procs()) continue;  // an OpenMP region
    std::vector<long> slots(n, 0);
    int runs = 0;
    for (int i = 0; i < 2000; ++i, ++runs) ASSERT_TRUE(one_job(n, &slots)) << "n " << n << ", run " << i;
    // Longer than a worker's spin (graph/team.cpp kSpinMicros): each job finds them asleep.
    for (int i = 0; i < 20; ++i, ++runs) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ASSERT_TRUE(one_job(n, &slots)) << "n " << n << ", after a pause, run " << i;
    }
    long total = 0;
    for (int t = 0; t < n; ++t) total += slots[t] / (t + 1);
    // Every run reached every slot unless OpenMP gave fewer threads (not on a free
    // machine, but never more): at least one slot per run.
    EXPECT_GE(total, runs) << "n " << n;
    EXPECT_EQ(slots[0], runs) << "thread 0 (the caller) runs every job";
  }
}

TEST(Concurrency, ParallelRunFromSeveralThreadsInsideJobsAndOpenMp) {
  if (kTsan) GTEST_SKIP() << "every case here falls back to OpenMP, which TSan cannot see";
  // Four callers at once: one holds the team, the others run OpenMP regions; all finish.
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      std::vector<long> slots(2, 0);
      bool good = true;
      for (int i = 0; i < 300; ++i) good &= one_job(2, &slots);
      if (good) ok.fetch_add(1);
    });
  for (std::thread& th : callers) th.join();
  EXPECT_EQ(ok.load(), 4);

  // A job that calls parallel_run: the inner call cannot have the team (busy).
  std::atomic<int> inner{0};
  parallel_run(2, [&](int, int) {
    parallel_run(2, [&](int, int) { inner.fetch_add(1); });
  });
  EXPECT_GE(inner.load(), 2);  // each outer thread's inner job ran on ≥ 1 thread

  // Inside an OpenMP region: no team, no nested region; every t still runs once.
  std::atomic<int> in_omp{0};
#pragma omp parallel num_threads(2)
  {
    parallel_run(2, [&](int, int) { in_omp.fetch_add(1); });
  }
  EXPECT_GE(in_omp.load(), 1);

  // In a child of fork(): neither the team's threads nor OpenMP's pool are there; the
  // caller runs every share.
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<long> child_slots(2, 0);
    _exit(one_job(2, &child_slots) && child_slots[0] == 1 && child_slots[1] == 2 ? 0 : 1);
  }
  int status = -1;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;

  // More threads than cores: an OpenMP region of that size (all t once).
  const int many = omp_get_num_procs() + 3;
  std::vector<long> slots(many, 0);
  EXPECT_TRUE(one_job(many, &slots));
}

}  // namespace
}  // namespace headwise::graph
