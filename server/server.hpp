// `headwise serve`: the OpenAI-compatible HTTP server around one model.
//   POST /v1/completions, POST /v1/chat/completions (stream: server-sent events),
//   GET /v1/models, GET /health, GET /metrics (Prometheus text).
// serve() blocks until SIGTERM or SIGINT, then shuts down gracefully: /health turns
// 503, new requests get 503, running generations finish until `shutdown_grace_s` and
// are cancelled after it, then the listener closes and serve() returns 0.
#pragma once

#include <memory>
#include <string>

#include "headwise/model.hpp"
#include "server/chat_template.hpp"
#include "server/scheduler.hpp"

namespace headwise::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0: any free port (printed on stdout)
  std::string model_name;          // the id in /v1/models and responses
  std::string api_key;             // non-empty: /v1/* need "Authorization: Bearer KEY"
  double timeout_s = 600;          // a request's bound from arrival; 0: none
  double shutdown_grace_s = 10;    // SIGTERM: running generations get this long to finish
  size_t max_body_bytes = 1 << 20; // larger request bodies: 413
  int http_threads = 0;            // 0: max_sessions + queue + 16
  ChatTemplate chat_template = ChatTemplate::none;  // forced, else from the model
  std::string model_chat_template;  // the model's Jinja text ("" if none), for messages
  SchedulerOptions scheduler;
};

// Blocks SIGTERM/SIGINT in the calling thread (serve() takes them with sigwait) and
// ignores SIGPIPE. Call it before any other thread exists (before loading the model:
// OpenMP's workers inherit the mask, otherwise one of them could take the signal and
// die of it).
void prepare_signals();

// Returns the process exit code: 0 after a graceful shutdown, 1 when the address
// cannot be bound or the sessions cannot be opened (message on stderr).
int serve(std::shared_ptr<const Model> model, const ServeOptions& options);

}  // namespace headwise::server
