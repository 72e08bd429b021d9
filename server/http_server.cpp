#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

#include "server/request.hpp"
#include "server/responses.hpp"
#include "server/server.hpp"

namespace headwise::server {
namespace {

constexpr const char* kJson = "application/json";

struct Context {
  std::shared_ptr<const Model> model;
  ServeOptions opt;
  ChatTemplate chat_template = ChatTemplate::none;
  Metrics metrics;
  std::unique_ptr<Scheduler> scheduler;
  std::atomic<bool> draining{false};
  std::atomic<int> open_streams{0};
  std::atomic<uint64_t> next_id{1};
};

void send_error(Context& cx, const std::string& endpoint, const ApiError& e, httplib::Response& res) {
  res.status = e.status;
  res.set_content(error_body(e), kJson);
  cx.metrics.count_request(endpoint, e.status);
}

ApiError unavailable(const std::string& message) {
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.message = message;
  return e;
}

// Request → prompt token ids, checked against the vocabulary and the context.
ApiError prompt_tokens(Context& cx, const ParsedRequest& r, std::vector<int32_t>* out) {
  const Tokenizer* tok = cx.model->tokenizer();
  const int vocab = cx.model->info().vocab_size;
  if (r.chat) {
    if (cx.chat_template == ChatTemplate::none)
      return bad_request(std::string(cx.opt.model_chat_template.empty()
                                         ? "this model has no chat template"
                                         : "this model's chat template is not one headwise renders") +
                             " (ChatML, Llama 3, Llama 2/Mistral [INST]); start the server with "
                             "--chat-template chatml|llama3|llama2, or use /v1/completions",
                         "messages", "chat_template_missing");
    if (!tok) return bad_request("this model has no tokenizer; chat needs one", "messages");
    // The template's markers (<|im_start|>, <|eot_id|>, ...) are the special tokens.
    EncodeOptions eo;
    eo.add_special = true;
    eo.parse_special = true;
    *out = tok->encode(render_chat(cx.chat_template, r.messages), eo);
  } else if (r.prompt_is_tokens) {
    for (int32_t id : r.prompt_tokens)
      if (id >= vocab)
        return bad_request("token id " + std::to_string(id) + " in 'prompt' is outside the vocabulary of " +
                               std::to_string(vocab),
                           "prompt");
    *out = r.prompt_tokens;
  } else {
    if (!tok) return bad_request("this model has no tokenizer: send 'prompt' as an array of token ids", "prompt");
    *out = tok->encode(r.prompt_text, true);
  }
  const int ctx = cx.scheduler->max_context();
  if (static_cast<int>(out->size()) > ctx)
    return bad_request("the prompt is " + std::to_string(out->size()) + " tokens, longer than the context of " +
                           std::to_string(ctx) + " tokens",
                       r.chat ? "messages" : "prompt", "context_length_exceeded");
  return {};
}

// Streams a job's output as server-sent events. Returns false (closing the
// connection) when the client is gone; the job is then cancelled.
void stream_job(Context& cx, std::shared_ptr<Job> job, ResponseMeta meta, bool include_usage, httplib::Response& res,
                const std::string& endpoint) {
  ++cx.open_streams;
  auto first = std::make_shared<bool>(true);
  auto last_write = std::make_shared<Clock::time_point>(Clock::now());
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&cx, job, meta, include_usage, first, last_write](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> l(job->mu);
        job->cv.wait_for(l, std::chrono::milliseconds(250), [&] { return !job->chunks.empty() || job->finished; });
        std::string out;
        while (!job->chunks.empty()) {
          out += stream_event(meta, job->chunks.front(), *first, "");
          *first = false;
          job->chunks.pop_front();
        }
        const bool finished = job->finished;
        const ApiError error = job->error;
        const std::string reason = job->finish_reason;
        const int p = job->prompt_tokens, c = job->completion_tokens;
        l.unlock();
        if (finished) {
          if (error) {
            out += stream_error_event(error);
          } else {
            out += stream_event(meta, Chunk{}, *first, reason);
            if (include_usage) out += stream_usage_event(meta, p, c);
            out += "data: [DONE]\n\n";
          }
        } else if (out.empty() && Clock::now() - *last_write > std::chrono::seconds(1)) {
          // An SSE comment while nothing is produced (queued, long prefill): a client
          // that left makes the second such write fail, which frees its session.
          out = ": waiting\n\n";
        }
        if (!out.empty()) {
          if (!sink.write(out.data(), out.size())) {
            job->cancelled = true;
            return false;
          }
          *last_write = Clock::now();
        }
        if (finished) sink.done();
        return true;
      },
      [&cx, job, endpoint](bool success) {
        {
          std::lock_guard<std::mutex> l(job->mu);
          if (!job->finished) job->cancelled = true;  // the client left before the end
        }
        if (success && job->completion_tokens >= 0) cx.metrics.add_tokens(job->prompt_tokens, job->completion_tokens);
        --cx.open_streams;
      });
  cx.metrics.count_request(endpoint, 200);
}

void handle_generation(Context& cx, bool chat, const httplib::Request& req, httplib::Response& res) {
  const std::string endpoint = req.path;
  ParsedRequest r;
  ApiError e = chat ? parse_chat_request(req.body, &r) : parse_completion_request(req.body, &r);
  if (!e && !r.model.empty() && r.model != cx.opt.model_name)
    e = bad_request("the model '" + r.model + "' does not exist; this server serves '" + cx.opt.model_name + "'",
                    "model", "model_not_found");
  auto job = std::make_shared<Job>();
  if (!e) e = prompt_tokens(cx, r, &job->prompt);
  if (e) return send_error(cx, endpoint, e, res);
  job->sampling = r.sampling;
  job->prompt_tokens = static_cast<int>(job->prompt.size());
  if (cx.opt.timeout_s > 0)
    job->deadline = job->arrival + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cx.opt.timeout_s));
  switch (cx.scheduler->submit(job)) {
    case Scheduler::Admit::ok: break;
    case Scheduler::Admit::queue_full: {
      ApiError q;
      q.status = 429;
      q.type = "rate_limit_error";
      q.code = "queue_full";
      q.message = "all " + std::to_string(cx.scheduler->options().max_sessions) + " sessions are busy and " +
                  std::to_string(cx.scheduler->options().queue) + " requests are waiting (--queue); retry later";
      res.set_header("Retry-After", "1");
      return send_error(cx, endpoint, q, res);
    }
    case Scheduler::Admit::shutting_down: return send_error(cx, endpoint, unavailable("the server is shutting down"), res);
  }
  ResponseMeta meta;
  meta.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(cx.next_id++);
  meta.model = cx.opt.model_name;
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.chat = chat;
  meta.logprobs = r.sampling.logprobs;
  if (r.stream) return stream_job(cx, job, meta, r.include_usage, res, endpoint);

  // Whole response: wait for the end (bounded by max_tokens, the context and --timeout).
  std::string text;
  std::vector<TokenLogprob> lps;
  std::unique_lock<std::mutex> l(job->mu);
  for (;;) {
    job->cv.wait(l, [&] { return !job->chunks.empty() || job->finished; });
    while (!job->chunks.empty()) {
      text += job->chunks.front().text;
      for (auto& t : job->chunks.front().logprobs) lps.push_back(std::move(t));
      job->chunks.pop_front();
    }
    if (job->finished) break;
  }
  if (job->error) return send_error(cx, endpoint, job->error, res);
  res.set_content(completion_body(meta, text, lps, job->finish_reason, job->prompt_tokens, job->completion_tokens), kJson);
  cx.metrics.count_request(endpoint, 200);
  cx.metrics.add_tokens(job->prompt_tokens, job->completion_tokens);
}

bool authorized(const Context& cx, const httplib::Request& req) {
  if (cx.opt.api_key.empty()) return true;
  return req.get_header_value("Authorization") == "Bearer " + cx.opt.api_key;
}

// A request body is JSON: a Content-Type that says otherwise (text/plain, a form,
// multipart) is refused rather than parsed as JSON anyway; none at all is accepted.
bool json_content_type(const httplib::Request& req) {
  if (!req.has_header("Content-Type")) return true;
  std::string t = req.get_header_value("Content-Type");
  t = t.substr(0, t.find(';'));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t == "application/json" || (t.size() > 5 && t.compare(t.size() - 5, 5, "+json") == 0);
}

// What httplib's own 4xx mean (it answers them before any handler runs).
std::string transport_error(const Context& cx, const httplib::Request& req, int status) {
  switch (status) {
    case 404: return "no such endpoint: " + req.method + " " + req.path;
    case 413: return "the request body is larger than " + std::to_string(cx.opt.max_body_bytes) + " bytes (--max-body)";
    case 414: return "the request URI is longer than 8192 bytes";
    case 400: {
      if (req.method.empty()) return "malformed HTTP request line";
      const std::string where = req.method + (req.path.empty() ? "" : " " + req.path) + ": ";
      const std::string length = req.get_header_value("Content-Length");
      if (!req.body.empty() && !length.empty() && std::to_string(req.body.size()) != length)
        return where + "the request body ended or stalled after " + std::to_string(req.body.size()) +
               " of its Content-Length " + length + " bytes (read timeout 5 s)";
      return where + "the HTTP request could not be read: a malformed request line or header (8192 bytes "
                     "a line at most), or a body missing, cut short or stalled (read timeout 5 s)";
    }
    default: return "HTTP " + std::to_string(status);
  }
}

// Header fields a request may carry: clients send about ten. (httplib 0.11 has no such
// bound of its own; it still reads the headers before this check can refuse them.)
constexpr size_t kMaxHeaderFields = 100;

// A request whose framing is ambiguous or abusive: too many header fields, Content-Length
// given twice or not a number, or both Content-Length and Transfer-Encoding (how a body
// is smuggled past a proxy that reads the other one).
ApiError framing_error(const httplib::Request& req) {
  ApiError e;
  e.status = 400;
  if (req.headers.size() > kMaxHeaderFields) {
    e.status = 431;
    e.message = "the request has " + std::to_string(req.headers.size()) + " header fields, more than " +
                std::to_string(kMaxHeaderFields);
    return e;
  }
  const size_t lengths = req.get_header_value_count("Content-Length");
  if (lengths == 0) return {};
  e.param = "Content-Length";
  const std::string n = req.get_header_value("Content-Length");
  if (lengths > 1)
    e.message = "Content-Length is given " + std::to_string(lengths) + " times";
  else if (n.empty() || n.size() > 19 || n.find_first_not_of("0123456789") != std::string::npos)
    e.message = "Content-Length '" + n.substr(0, 40) + "' is not a number of bytes";
  else if (req.has_header("Transfer-Encoding"))
    e.message = "both Content-Length and Transfer-Encoding are given";
  else
    return {};
  return e;
}

void routes(httplib::Server& svr, Context& cx) {
  // Requests refused before routing (httplib still consumes their body, so a keep-alive
  // connection stays in step).
  svr.set_pre_routing_handler([&cx](const httplib::Request& req, httplib::Response& res) {
    ApiError e = framing_error(req);
    // /health and /metrics stay open for orchestrators' probes and scrapers.
    if (!e && req.path.rfind("/v1/", 0) == 0 && !authorized(cx, req)) {
      e.status = 401;
      e.code = "invalid_api_key";
      e.message = "missing or wrong API key: send 'Authorization: Bearer KEY'";
    }
    if (!e && req.method == "POST" && !json_content_type(req)) {
      e.status = 415;
      e.param = "Content-Type";
      e.message = "the request body must be JSON: Content-Type '" + req.get_header_value("Content-Type") +
                  "' is not application/json";
    }
    if (!e) return httplib::Server::HandlerResponse::Unhandled;
    send_error(cx, req.path, e, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.Get("/health", [&cx](const httplib::Request&, httplib::Response& res) {
    if (cx.draining) {
      res.status = 503;
      res.set_content("{\"status\":\"shutting down\"}", kJson);
    } else {
      res.set_content("{\"status\":\"ok\"}", kJson);
    }
  });
  svr.Get("/metrics", [&cx](const httplib::Request&, httplib::Response& res) {
    res.set_content(cx.metrics.render(cx.scheduler->queued(), cx.scheduler->active(), cx.scheduler->options().max_sessions),
                    "text/plain; version=0.0.4");
  });
  svr.Get("/v1/models", [&cx](const httplib::Request& req, httplib::Response& res) {
    res.set_content(models_body(cx.opt.model_name, 0), kJson);
    cx.metrics.count_request(req.path, 200);
  });
  svr.Post("/v1/completions", [&cx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(cx, false, req, res);
  });
  svr.Post("/v1/chat/completions", [&cx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(cx, true, req, res);
  });
  svr.set_error_handler([&cx](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e;
    e.status = res.status;
    e.message = transport_error(cx, req, res.status);
    res.set_content(error_body(e), kJson);
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    ApiError e;
    e.status = 500;
    e.type = "server_error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& x) {
      e.message = x.what();
    } catch (...) {
      e.message = "unknown error";
    }
    res.status = 500;
    res.set_content(error_body(e), kJson);
  });
}

sigset_t shutdown_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  return sigs;
}

}  // namespace

// Signals are taken by serve()'s thread with sigwait: blocked before any thread starts
// so every thread inherits the mask. A client that disconnects must not kill the
// process with SIGPIPE.
void prepare_signals() {
  sigset_t sigs = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int serve(std::shared_ptr<const Model> model, const ServeOptions& options) {
  prepare_signals();
  sigset_t sigs = shutdown_signals();

  Context cx;
  cx.model = model;
  cx.opt = options;
  cx.chat_template = options.chat_template;
  cx.scheduler = std::make_unique<Scheduler>(model, options.scheduler, &cx.metrics);
  if (Status s = cx.scheduler->start(); !s.ok()) {
    std::fprintf(stderr, "headwise serve: %s\n", s.message().c_str());
    return 1;
  }
  httplib::Server svr;
  const SchedulerOptions& so = cx.scheduler->options();
  const int pool = options.http_threads > 0 ? options.http_threads : so.max_sessions + so.queue + 16;
  svr.new_task_queue = [pool] { return new httplib::ThreadPool(pool); };
  svr.set_payload_max_length(options.max_body_bytes);
  svr.set_tcp_nodelay(true);  // tokens go out as they come, not after Nagle's delay
  // Idle keep-alive connections hold a worker until this passes; it bounds how long
  // shutdown waits for them.
  svr.set_keep_alive_timeout(2);
  svr.set_keep_alive_max_count(1000);  // (httplib closes after 5 by default)
  // httplib 0.11 listens with a backlog of 5 (compiled into Debian's library). A burst of
  // new connections overflows that queue; the kernel then answers with SYN cookies and
  // resets a connection whose cookie fails, so a client sending a large body saw
  // ECONNRESET (measured: 17 of 1,800 POSTs, 20 at a time, on 2 loaded cores). Keep the
  // listening socket (the options hook runs on it before bind) and listen again on it
  // with the kernel's maximum queue: Linux updates the backlog of a listening socket.
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  routes(svr, cx);

  int port = options.port;
  if (port == 0) {
    port = svr.bind_to_any_port(options.host);
  } else if (!svr.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port > 0 && listen_fd >= 0 && ::listen(listen_fd, SOMAXCONN) != 0) {
    std::fprintf(stderr, "headwise serve: warning: cannot raise the listen backlog: %s\n", std::strerror(errno));
  }
  if (port <= 0) {
    std::fprintf(stderr, "headwise serve: cannot listen on %s:%d (address in use or not local?)\n",
                 options.host.c_str(), options.port);
    return 1;
  }
  std::printf("headwise serve: listening on http://%s:%d (model '%s', %d sessions, queue %d, context %d, chat template %s)\n",
              options.host.c_str(), port, options.model_name.c_str(), so.max_sessions, so.queue, so.max_context,
              chat_template_name(cx.chat_template));
  std::fflush(stdout);
  std::atomic<bool> listening_ended{false};
  std::thread listener([&] {
    // The HTTP worker threads are created here and inherit the name (see scheduler.cpp).
    pthread_setname_np(pthread_self(), "hw-http");
    svr.listen_after_bind();
    listening_ended = true;
  });

  int code = 0;
  for (;;) {
    timespec ts{0, 200 * 1000 * 1000};
    const int sig = sigtimedwait(&sigs, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) break;
    if (listening_ended) {
      std::fprintf(stderr, "headwise serve: the listener stopped unexpectedly\n");
      code = 1;
      break;
    }
  }
  // Graceful shutdown: refuse new work, let running generations end within the grace
  // period, give streams a moment to send their last events, then close.
  std::fprintf(stderr, "headwise serve: shutting down (grace %.1f s)\n", options.shutdown_grace_s);
  cx.draining = true;
  const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.shutdown_grace_s));
  cx.scheduler->drain(Clock::now() + grace);
  for (int i = 0; i < 40 && cx.open_streams > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  svr.stop();
  listener.join();
  cx.scheduler->stop();
  std::fprintf(stderr, "headwise serve: stopped (%llu requests answered 200, %llu 429)\n",
               static_cast<unsigned long long>(cx.metrics.requests(200)),
               static_cast<unsigned long long>(cx.metrics.requests(429)));
  return code;
}

}  // namespace headwise::server
