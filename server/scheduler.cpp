#include "server/scheduler.hpp"

#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "headwise/sampler.hpp"
#include "server/text_assembler.hpp"

namespace headwise::server {
namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

uint64_t fresh_seed() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> l(mu);
  return gen() | 1;  // xorshift needs a non-zero state
}

}  // namespace

struct Scheduler::Seq {
  std::shared_ptr<Job> job;
  int slot = -1;
  Session* session = nullptr;
  int prefilled = 0;         // prompt tokens already in the KV cache
  bool decoding = false;     // prompt done; `last` is the token to decode next
  int32_t last = 0;
  int generated = 0;
  std::unique_ptr<Sampler> sampler;
  TextAssembler text;
  Clock::time_point last_token_time;
  std::string reason;  // how it ended: "stop"/"length", or `error`
  ApiError error;
};

Scheduler::Scheduler(std::shared_ptr<const Model> model, SchedulerOptions options, Metrics* metrics)
    : model_(std::move(model)), opt_(std::move(options)), metrics_(metrics) {
  if (opt_.max_context <= 0 || opt_.max_context > model_->info().max_seq_len)
    opt_.max_context = model_->info().max_seq_len;
}

Scheduler::~Scheduler() { stop(); }

Status Scheduler::start() {
  SessionOptions so;
  so.threads = opt_.threads;
  so.max_context = opt_.max_context;
  so.max_chunk = std::min(opt_.prefill_chunk, opt_.max_context);
  so.kv_type = opt_.kv_type;
  for (int i = 0; i < opt_.max_sessions; ++i) {
    std::unique_ptr<Session> s;
    HW_RETURN_IF_ERROR(model_->open_session(so, &s));
    sessions_.push_back(std::move(s));
    free_.push_back(opt_.max_sessions - 1 - i);
  }
  thread_ = std::thread([this] {
    // Named so that its OpenMP workers (which inherit the name) can be told from any
    // other pool: tests/server/omp_pool_test.mjs counts them.
    pthread_setname_np(pthread_self(), "hw-scheduler");
    loop();
  });
  return Status::Ok();
}

Scheduler::Admit Scheduler::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (draining_ || stop_) return Admit::shutting_down;
    if (active_ + static_cast<int>(waiting_.size()) >= opt_.max_sessions + opt_.queue)
      return Admit::queue_full;
    waiting_.push_back(job);
  }
  cv_.notify_all();
  return Admit::ok;
}

int Scheduler::active() const {
  std::lock_guard<std::mutex> l(mu_);
  return active_;
}

int Scheduler::queued() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(waiting_.size());
}

void Scheduler::drain(Clock::time_point cancel_at) {
  std::unique_lock<std::mutex> l(mu_);
  draining_ = true;
  cancel_at_ = cancel_at;
  cv_.notify_all();
  cv_.wait_until(l, cancel_at + std::chrono::seconds(1), [&] { return active_ == 0 && waiting_.empty(); });
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::admit_locked(std::vector<Seq>* running) {
  while (!free_.empty() && !waiting_.empty()) {
    std::shared_ptr<Job> job = waiting_.front();
    waiting_.pop_front();
    Seq s;
    s.job = job;
    s.slot = free_.back();
    free_.pop_back();
    s.session = sessions_[s.slot].get();
    s.session->reset();
    const SamplingParams& sp = job->sampling;
    s.sampler = std::make_unique<Sampler>(model_->info().vocab_size, sp.temperature, sp.top_p,
                                          sp.has_seed ? (sp.seed ? sp.seed : 1) : fresh_seed());
    s.text = TextAssembler(sp.stop);
    ++active_;
    running->push_back(std::move(s));
  }
}

// Frees the session first, then tells the waiting HTTP thread: a client that sends its
// next request as soon as it has this answer must find the session free, not a 429.
void Scheduler::release(Seq* s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(s->slot);
    --active_;
  }
  if (s->error) s->job->fail(s->error, s->generated);
  else s->job->finish(s->reason, s->generated);
  s->job.reset();
  cv_.notify_all();
}

// Handles a sampled `token`: end tokens, text, stop strings, limits. Returns true when
// the sequence is over (s->reason says why; release() tells the job).
bool Scheduler::emit(Seq* s, int32_t token) {
  Job& job = *s->job;
  const Tokenizer* tok = model_->tokenizer();
  const int32_t prev = s->last;  // the prompt's last token before the first sample
  const Clock::time_point now = Clock::now();
  if (s->generated == 0) metrics_->observe_ttft(seconds(now - job.arrival));
  else metrics_->observe_token_latency(seconds(now - s->last_token_time));
  s->last_token_time = now;

  auto piece = [&](int32_t id) { return tok ? tok->piece_bytes(prev, id) : std::to_string(id) + "\n"; };
  Chunk chunk;
  if (job.sampling.logprobs >= 0) {
    // log-softmax of the raw logits (the model's distribution, before temperature).
    const float* lg = s->session->logits();
    const int vocab = model_->info().vocab_size;
    float mx = lg[0];
    for (int i = 1; i < vocab; ++i) mx = std::max(mx, lg[i]);
    double sum = 0;
    for (int i = 0; i < vocab; ++i) sum += std::exp(double(lg[i]) - mx);
    const float lse = mx + static_cast<float>(std::log(sum));
    TokenLogprob tl;
    tl.token = piece(token);
    tl.logprob = lg[token] - lse;
    const int k = std::min(job.sampling.logprobs, vocab);
    std::vector<int32_t> ids(vocab);
    for (int i = 0; i < vocab; ++i) ids[i] = i;
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                      [&](int32_t a, int32_t b) { return lg[a] > lg[b] || (lg[a] == lg[b] && a < b); });
    for (int i = 0; i < k; ++i) tl.top.emplace_back(piece(ids[i]), lg[ids[i]] - lse);
    chunk.logprobs.push_back(std::move(tl));
  }

  if (opt_.end_tokens.count(token) && !job.sampling.ignore_eos) {
    chunk.text = s->text.flush();
    if (!chunk.text.empty() || !chunk.logprobs.empty()) job.push(std::move(chunk));
    s->reason = "stop";
    return true;
  }
  ++s->generated;
  bool stopped = false;
  chunk.text = s->text.push(piece(token), &stopped);
  s->last = token;
  std::string reason;
  if (stopped) reason = "stop";
  else if (job.sampling.max_tokens > 0 && s->generated >= job.sampling.max_tokens) reason = "length";
  else if (s->session->position() >= opt_.max_context) reason = "length";  // no room to decode it
  if (!reason.empty() && !stopped) chunk.text += s->text.flush();
  if (!chunk.text.empty() || !chunk.logprobs.empty()) job.push(std::move(chunk));
  if (!reason.empty()) {
    s->reason = reason;
    return true;
  }
  return false;
}

void Scheduler::loop() {
  std::vector<Seq> running;
  std::vector<Session*> batch;
  std::vector<int32_t> tokens;
  std::vector<int> counts;
  std::vector<size_t> which, todo;
  std::vector<int32_t> sampled;
  for (;;) {
    // 1. Drop what must go; admit.
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !running.empty() || !waiting_.empty(); });
      if (stop_) break;
      const Clock::time_point now = Clock::now();
      const bool cancel_all = draining_ && now >= cancel_at_;
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        Job& j = **it;
        if (j.cancelled || now >= j.deadline || cancel_all) {
          if (j.cancelled) metrics_->count_cancelled();
          ApiError e;
          e.status = j.cancelled || cancel_all ? 503 : 504;
          e.type = "server_error";
          e.message = cancel_all ? "the server is shutting down"
                                 : "the request timed out waiting for a session (--timeout)";
          j.fail(e, 0);
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
      admit_locked(&running);
    }
    const Clock::time_point now = Clock::now();
    bool cancel_all;
    {
      std::lock_guard<std::mutex> l(mu_);
      cancel_all = draining_ && now >= cancel_at_;
    }
    for (size_t i = 0; i < running.size();) {
      Seq& s = running[i];
      Job& j = *s.job;
      if (j.cancelled || now >= j.deadline || cancel_all) {
        metrics_->count_cancelled();
        s.error.type = "server_error";
        s.error.status = j.cancelled || cancel_all ? 503 : 504;
        s.error.message = cancel_all ? "the server is shutting down; generation cancelled"
                                     : j.cancelled ? "cancelled" : "the request timed out (--timeout)";
        release(&s);
        running.erase(running.begin() + i);
      } else {
        ++i;
      }
    }

    // 2. One pass over the model for every sequence: the next token of each decoding
    //    one, and prompt chunks of those still prefilling, at most prefill_chunk prompt
    //    tokens in all. Each projection is one GEMM with M = all these rows.
    batch.clear();
    tokens.clear();
    counts.clear();
    which.clear();
    int decoding = 0;
    const bool any_decoding = std::any_of(running.begin(), running.end(), [](const Seq& s) { return s.decoding; });
    int budget = any_decoding && opt_.decode_prefill_chunk > 0 ? std::min(opt_.prefill_chunk, opt_.decode_prefill_chunk)
                                                                : opt_.prefill_chunk;
    for (size_t i = 0; i < running.size(); ++i) {
      Seq& s = running[i];
      int k = 1;
      if (s.decoding) {
        tokens.push_back(s.last);
        ++decoding;
      } else {
        k = std::min(static_cast<int>(s.job->prompt.size()) - s.prefilled, budget);
        if (k <= 0) continue;
        budget -= k;
        tokens.insert(tokens.end(), s.job->prompt.begin() + s.prefilled, s.job->prompt.begin() + s.prefilled + k);
      }
      batch.push_back(s.session);
      counts.push_back(k);
      which.push_back(i);
    }
    if (batch.empty()) continue;
    if (decoding > 0) {
      metrics_->observe_batch(decoding);
      const int prompt = static_cast<int>(tokens.size()) - decoding;
      if (prompt > 0) metrics_->observe_prompt_tokens_while_decoding(prompt);
    }
    const Status st = Session::step_batch(batch.data(), tokens.data(), counts.data(), static_cast<int>(batch.size()),
                                          opt_.threads);
    // 3. Sample a token for every sequence with logits to sample from (decoding, or its
    //    prompt just done). At temperature > 0 that is a softmax over the vocabulary per
    //    sequence, so they are spread over the compute threads (each has its own sampler).
    sampled.assign(which.size(), -1);
    todo.clear();
    for (size_t b = 0; b < which.size() && st.ok(); ++b) {
      const Seq& s = running[which[b]];
      if (s.decoding || s.prefilled + counts[b] == static_cast<int>(s.job->prompt.size())) todo.push_back(b);
    }
    const int nt = std::max(1, std::min(static_cast<int>(todo.size()), opt_.threads > 0 ? opt_.threads : omp_get_max_threads()));
    auto sample = [&](size_t t) {
      Seq& s = running[which[todo[t]]];
      sampled[todo[t]] = s.sampler->sample(s.session->logits());
    };
    if (nt == 1) {  // one sequence (the one-client case): no parallel region to open
      for (size_t t = 0; t < todo.size(); ++t) sample(t);
    } else {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
      for (size_t t = 0; t < todo.size(); ++t) sample(t);
    }
    std::vector<bool> ended(running.size(), false);
    for (size_t b = 0; b < which.size(); ++b) {
      Seq& s = running[which[b]];
      if (!st.ok()) {
        s.error.status = 500;
        s.error.type = "server_error";
        s.error.message = st.message();
        ended[which[b]] = true;
        continue;
      }
      if (!s.decoding) {
        s.prefilled += counts[b];
        if (s.prefilled < static_cast<int>(s.job->prompt.size())) continue;
        s.decoding = true;
        s.last = s.job->prompt.back();
      }
      ended[which[b]] = emit(&s, sampled[b]);
    }
    for (size_t i = running.size(); i-- > 0;)
      if (ended[i]) {
        release(&running[i]);
        running.erase(running.begin() + i);
      }
  }
  // Stopped with work left (exit without a drain): end every job so no waiter hangs.
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.message = "the server stopped";
  for (Seq& s : running) s.job->fail(e, s.generated);
  std::lock_guard<std::mutex> l(mu_);
  for (auto& j : waiting_) j->fail(e, 0);
  waiting_.clear();
}

}  // namespace headwise::server
