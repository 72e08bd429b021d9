// Server metrics in Prometheus' text exposition format (GET /metrics): requests by
// endpoint and status, tokens in and out, queue length and active sessions (read from
// the scheduler when scraped), and histograms of time to first token and of the time
// between successive tokens of a sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace headwise::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending (seconds)
  void observe(double v);
  // Appends the _bucket/_sum/_count lines of metric `name`.
  void render(const std::string& name, std::string* out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last one is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void count_request(const std::string& endpoint, int status);
  void add_tokens(int64_t prompt, int64_t completion);
  void observe_ttft(double seconds);
  void observe_token_latency(double seconds);
  void observe_batch(int sequences);  // one decode_batch step of this many sequences
  // Prompt tokens prefilled by a step that also advanced decoding sequences: what
  // lengthens those sequences' gap between tokens (--prefill-chunk-decoding bounds it).
  void observe_prompt_tokens_while_decoding(int tokens);
  void count_cancelled();
  // Gauges read at scrape time.
  std::string render(int queue_length, int active_sessions, int max_sessions) const;

  // For tests and the exit summary.
  uint64_t requests(int status) const;
  int max_prompt_tokens_while_decoding() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  uint64_t cancelled_ = 0;
  Histogram ttft_, token_latency_, batch_, prompt_while_decoding_;
  int max_prompt_while_decoding_ = 0;
};

}  // namespace headwise::server
