// One generation request as the scheduler sees it, shared between the HTTP thread that
// waits for its output and the scheduler thread that produces it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/api_error.hpp"
#include "server/request.hpp"

namespace headwise::server {

using Clock = std::chrono::steady_clock;

struct TokenLogprob {
  std::string token;  // the token's bytes
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely alternatives
};

struct Chunk {
  std::string text;
  std::vector<TokenLogprob> logprobs;
};

struct Job {
  // Input, set before submission.
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  Clock::time_point arrival = Clock::now();
  Clock::time_point deadline = Clock::time_point::max();

  // Set by the HTTP side: the client went away; the scheduler drops the job at its next step.
  std::atomic<bool> cancelled{false};

  // Output, under mu.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Chunk> chunks;
  bool finished = false;
  std::string finish_reason;  // "stop" or "length" when finished without error
  ApiError error;             // set when finished with an error
  int prompt_tokens = 0, completion_tokens = 0;

  void push(Chunk c) {
    {
      std::lock_guard<std::mutex> l(mu);
      chunks.push_back(std::move(c));
    }
    cv.notify_all();
  }
  void finish(std::string reason, int completion) {
    {
      std::lock_guard<std::mutex> l(mu);
      finished = true;
      finish_reason = std::move(reason);
      completion_tokens = completion;
    }
    cv.notify_all();
  }
  void fail(ApiError e, int completion) {
    {
      std::lock_guard<std::mutex> l(mu);
      finished = true;
      error = std::move(e);
      completion_tokens = completion;
    }
    cv.notify_all();
  }
};

}  // namespace headwise::server
