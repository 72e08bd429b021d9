// Continuous batching: one thread owns the model's compute. Each step it
//   1. drops sequences whose client left, whose deadline passed, or (shutting down)
//      whose grace period ended, and admits waiting jobs into free sessions;
//   2. runs ONE Session::step_batch over every sequence: the next token of each
//      decoding sequence and prompt chunks of the admitted ones, at most
//      `prefill_chunk` prompt tokens in all (`decode_prefill_chunk` while any sequence
//      decodes), so a long prompt delays the running sequences by one chunk's time per
//      step, not by the whole prompt, and prompts and decodes share one pass over the
//      weights (one GEMM per projection);
//   3. samples a token for every sequence whose prompt is done (spread over the compute
//      threads: a softmax over the vocabulary each) and hands it to its job.
// Sequences join and leave between steps. HTTP threads only submit jobs and read
// their output (text chunks; the JSON and the socket writes are theirs).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "headwise/model.hpp"
#include "server/job.hpp"
#include "server/metrics.hpp"

namespace headwise::server {

struct SchedulerOptions {
  int max_sessions = 4;     // sequences running at once (one KV cache each)
  int queue = 16;           // jobs waiting beyond those
  int max_context = 0;      // positions per session; 0: the model's
  int threads = 0;          // compute threads (0: all cores)
  int prefill_chunk = 256;  // prompt tokens per step, all sequences together
  // ... while some sequence is decoding (0: prefill_chunk). Each such step lengthens the
  // decoding sequences' gap between tokens by the time of its prompt tokens: the tail of
  // the gaps of 4-64 clients when others join (256 tokens: ~200 ms on llama-134m, 2
  // cores). Smaller bounds that tail and costs a pass over the weights per chunk
  // (measured at 16 clients: 32 gave p99 106 ms and 366 tokens/s, 256 gave 179 ms and 420).
  int decode_prefill_chunk = 0;
  KvType kv_type = KvType::f32;  // element type of every session's KV cache
  std::set<int32_t> end_tokens;  // sampling one of these ends the sequence ("stop")
};

class Scheduler {
 public:
  Scheduler(std::shared_ptr<const Model> model, SchedulerOptions options, Metrics* metrics);
  ~Scheduler();

  // Opens the sessions and starts the thread.
  Status start();

  enum class Admit { ok, queue_full, shutting_down };
  // Queues a job (prompt already checked against the vocabulary and the context).
  Admit submit(const std::shared_ptr<Job>& job);

  // Stops admitting (submit answers shutting_down); jobs still running at `cancel_at`
  // are ended with a 503 error. Returns when none is left or at the deadline + 1 s.
  void drain(Clock::time_point cancel_at);
  void stop();  // ends the thread (after drain, or at exit)

  int active() const;
  int queued() const;
  int max_context() const { return opt_.max_context; }
  const SchedulerOptions& options() const { return opt_; }

 private:
  struct Seq;
  void loop();
  void admit_locked(std::vector<Seq>* running);
  bool emit(Seq* s, int32_t token);  // returns true when the sequence ended
  void release(Seq* s);

  std::shared_ptr<const Model> model_;
  SchedulerOptions opt_;
  Metrics* metrics_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<int> free_;       // indices into sessions_, under mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;  // work arrived / a sequence ended
  std::deque<std::shared_ptr<Job>> waiting_;
  int active_ = 0;
  bool draining_ = false, stop_ = false;
  Clock::time_point cancel_at_ = Clock::time_point::max();
  std::thread thread_;
};

}  // namespace headwise::server
