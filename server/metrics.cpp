#include "server/metrics.hpp"

#include <cstdio>

namespace headwise::server {
namespace {

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(const std::string& name, std::string* out) const {
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    *out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  *out += name + "_sum " + num(sum_) + "\n";
  *out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      token_latency_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      batch_({1, 2, 4, 8, 16, 32, 64, 128}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::add_tokens(int64_t prompt, int64_t completion) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_tokens_ += prompt;
  completion_tokens_ += completion;
}

void Metrics::observe_ttft(double s) {
  std::lock_guard<std::mutex> l(mu_);
  ttft_.observe(s);
}

void Metrics::observe_token_latency(double s) {
  std::lock_guard<std::mutex> l(mu_);
  token_latency_.observe(s);
}

void Metrics::observe_batch(int sequences) {
  std::lock_guard<std::mutex> l(mu_);
  batch_.observe(sequences);
}

void Metrics::count_cancelled() {
  std::lock_guard<std::mutex> l(mu_);
  ++cancelled_;
}

uint64_t Metrics::requests(int status) const {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t n = 0;
  for (const auto& [key, count] : requests_)
    if (key.second == status) n += count;
  return n;
}

std::string Metrics::render(int queue_length, int active_sessions, int max_sessions) const {
  std::lock_guard<std::mutex> l(mu_);
  std::string o;
  o += "# HELP headwise_requests_total HTTP requests answered, by endpoint and status code.\n"
       "# TYPE headwise_requests_total counter\n";
  for (const auto& [key, count] : requests_)
    o += "headwise_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
         "\"} " + std::to_string(count) + "\n";
  o += "# HELP headwise_prompt_tokens_total Prompt tokens processed.\n"
       "# TYPE headwise_prompt_tokens_total counter\n"
       "headwise_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  o += "# HELP headwise_completion_tokens_total Tokens generated.\n"
       "# TYPE headwise_completion_tokens_total counter\n"
       "headwise_completion_tokens_total " + std::to_string(completion_tokens_) + "\n";
  o += "# HELP headwise_requests_cancelled_total Generations stopped early: client gone, timeout or shutdown.\n"
       "# TYPE headwise_requests_cancelled_total counter\n"
       "headwise_requests_cancelled_total " + std::to_string(cancelled_) + "\n";
  o += "# HELP headwise_queue_length Requests waiting for a session.\n"
       "# TYPE headwise_queue_length gauge\n"
       "headwise_queue_length " + std::to_string(queue_length) + "\n";
  o += "# HELP headwise_active_sessions Sequences being prefilled or decoded.\n"
       "# TYPE headwise_active_sessions gauge\n"
       "headwise_active_sessions " + std::to_string(active_sessions) + "\n";
  o += "# HELP headwise_max_sessions Sessions the server runs at once (--max-sessions).\n"
       "# TYPE headwise_max_sessions gauge\n"
       "headwise_max_sessions " + std::to_string(max_sessions) + "\n";
  o += "# HELP headwise_time_to_first_token_seconds From arrival to the first generated token.\n"
       "# TYPE headwise_time_to_first_token_seconds histogram\n";
  ttft_.render("headwise_time_to_first_token_seconds", &o);
  o += "# HELP headwise_token_latency_seconds Time between successive generated tokens of a sequence.\n"
       "# TYPE headwise_token_latency_seconds histogram\n";
  token_latency_.render("headwise_token_latency_seconds", &o);
  o += "# HELP headwise_decode_batch_size Sequences advanced together by one decode step.\n"
       "# TYPE headwise_decode_batch_size histogram\n";
  batch_.render("headwise_decode_batch_size", &o);
  return o;
}

}  // namespace headwise::server
