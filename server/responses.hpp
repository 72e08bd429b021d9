// The JSON the endpoints answer with, following OpenAI's schemas: whole responses,
// streamed chunks (server-sent events) and the model list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/job.hpp"

namespace headwise::server {

struct ResponseMeta {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // unix seconds
  bool chat = false;
  int logprobs = -1;    // as requested; -1 none
};

// The whole (non-streamed) response once the job has finished without error.
std::string completion_body(const ResponseMeta& m, const std::string& text,
                            const std::vector<TokenLogprob>& logprobs, const std::string& finish_reason,
                            int prompt_tokens, int completion_tokens);

// One SSE event ("data: {...}\n\n"). `first` opens a chat stream with the role; a
// non-empty finish_reason closes the choice.
std::string stream_event(const ResponseMeta& m, const Chunk& c, bool first, const std::string& finish_reason);
std::string stream_usage_event(const ResponseMeta& m, int prompt_tokens, int completion_tokens);
std::string stream_error_event(const ApiError& e);

std::string models_body(const std::string& model, int64_t created);

}  // namespace headwise::server
