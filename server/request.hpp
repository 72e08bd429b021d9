// Parsing and validating the bodies of POST /v1/completions and /v1/chat/completions
// against OpenAI's published schemas. Every rejection is a 400 naming the field and
// what was expected; nothing here touches the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/api_error.hpp"
#include "server/chat_template.hpp"

namespace headwise::server {

struct SamplingParams {
  int max_tokens = -1;          // -1: until the context is full (chat's default)
  float temperature = 1.0f;     // 0: greedy
  float top_p = 1.0f;
  bool has_seed = false;
  uint64_t seed = 0;
  std::vector<std::string> stop;  // up to 4 non-empty strings
  int logprobs = -1;            // -1: none; else how many alternatives per token (0-20)
  bool ignore_eos = false;      // llama-server's and vLLM's extension: generate through the
                                // end-of-text ids (benchmarks with a fixed length)
};

struct ParsedRequest {
  bool chat = false;
  std::string model;            // as sent ("" when absent)
  bool stream = false;
  bool include_usage = false;   // stream_options.include_usage
  SamplingParams sampling;
  // completions: the prompt as text or as token ids (exactly one of them is used)
  std::string prompt_text;
  std::vector<int32_t> prompt_tokens;
  bool prompt_is_tokens = false;
  // chat
  std::vector<ChatMessage> messages;
};

// Largest accepted values: bound memory and time per request before anything is queued.
constexpr int kMaxStopStrings = 4;
constexpr size_t kMaxStopLength = 256;
constexpr int kMaxTopLogprobs = 20;

// Parses `body` (JSON text). On error returns it and leaves *out partly filled.
ApiError parse_completion_request(const std::string& body, ParsedRequest* out);
ApiError parse_chat_request(const std::string& body, ParsedRequest* out);

}  // namespace headwise::server
