#include "server/metrics.hpp"

#include <algorithm>

#include <cstdio>

namespace headwise::server {
namespace {

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// A metric family's # HELP and # TYPE lines.
void family(std::string* o, const char* name, const char* type, const char* help) {
  *o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// A family with one unlabelled sample.
void single(std::string* o, const char* name, const char* type, const char* help, int64_t value) {
  family(o, name, type, help);
  *o += std::string(name) + " " + std::to_string(value) + "\n";
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
      batch_({1, 2, 4, 8, 16, 32, 64, 128}),
      prompt_while_decoding_({8, 16, 32, 64, 128, 256, 512}) {}

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

void Metrics::observe_prompt_tokens_while_decoding(int tokens) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_while_decoding_.observe(tokens);
  max_prompt_while_decoding_ = std::max(max_prompt_while_decoding_, tokens);
}

int Metrics::max_prompt_tokens_while_decoding() const {
  std::lock_guard<std::mutex> l(mu_);
  return max_prompt_while_decoding_;
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
  family(&o, "headwise_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, count] : requests_)
    o += "headwise_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
         "\"} " + std::to_string(count) + "\n";
  single(&o, "headwise_prompt_tokens_total", "counter", "Prompt tokens processed.", prompt_tokens_);
  single(&o, "headwise_completion_tokens_total", "counter", "Tokens generated.", completion_tokens_);
  single(&o, "headwise_requests_cancelled_total", "counter",
         "Generations stopped early: client gone, timeout or shutdown.", static_cast<int64_t>(cancelled_));
  single(&o, "headwise_queue_length", "gauge", "Requests waiting for a session.", queue_length);
  single(&o, "headwise_active_sessions", "gauge", "Sequences being prefilled or decoded.", active_sessions);
  single(&o, "headwise_max_sessions", "gauge", "Sessions the server runs at once (--max-sessions).", max_sessions);
  family(&o, "headwise_time_to_first_token_seconds", "histogram", "From arrival to the first generated token.");
  ttft_.render("headwise_time_to_first_token_seconds", &o);
  family(&o, "headwise_token_latency_seconds", "histogram", "Time between successive generated tokens of a sequence.");
  token_latency_.render("headwise_token_latency_seconds", &o);
  family(&o, "headwise_decode_batch_size", "histogram", "Sequences advanced together by one decode step.");
  batch_.render("headwise_decode_batch_size", &o);
  family(&o, "headwise_step_prompt_tokens_while_decoding", "histogram",
         "Prompt tokens prefilled by a step that also advanced decoding sequences.");
  prompt_while_decoding_.render("headwise_step_prompt_tokens_while_decoding", &o);
  return o;
}

}  // namespace headwise::server
