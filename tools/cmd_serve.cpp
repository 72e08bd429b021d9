// headwise serve — an OpenAI-compatible HTTP server for one model (server/). This file
// only turns the command line into ServeOptions and loads the model.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "headwise/model.hpp"
#include "server/server.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"

namespace headwise::tools {
namespace {

// OpenMP barrier waiting. A decode step opens ~100 parallel regions; at each one a
// thread that is done polls until its partners are (libgomp: 300000 polls, ~6 ms, before
// it sleeps in the kernel). When anything else wants a core — the HTTP thread, the
// client, another process — and takes one from a compute thread, the other compute
// threads keep polling for their whole time slice instead of handing the core to the one
// that was taken off: every region then costs a scheduler slice (measured on 2 cores
// with a compiler running: ~800 ms per token instead of 11, and the one-client p99 gap
// between tokens of issue 11). Polling ~20 us covers the normal imbalance of a region;
// past that the thread sleeps, its core goes to the thread that was waiting for one,
// and the barrier's last thread wakes it. The server is the process that always shares
// its cores (with its own HTTP threads at least), so it sets this for itself.
// What it does not cure: with another process holding one of 2 cores, both compute
// threads end up on the other (perf sched: a compiler alone on CPU 0 for 150 ms, the two
// alternating on CPU 1), and a step runs at one core's speed with a hand-off at every
// barrier, ~2-4x its time: the remaining one-client tail on a shared machine. A work
// split that a late thread does not hold up (dynamic) or fewer threads would be next.
constexpr int kDefaultOmpSpin = 1000;

// libgomp reads GOMP_SPINCOUNT once, when it is loaded (before main), so the setting
// takes a fresh start of this program: re-executes it with the variable set, the same
// arguments and pid. Returns only when no restart is needed or it failed (then the
// server runs with libgomp's default, which is correct, only slower under load).
void ensure_omp_spin(bool given, long long spin) {
  const char* have = std::getenv("GOMP_SPINCOUNT");
  if (!given && (have || std::getenv("OMP_WAIT_POLICY"))) return;  // the user's choice
  const std::string want = std::to_string(spin);
  if (have && want == have) return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (args.empty()) return;
  std::vector<char*> argv;
  for (std::string& x : args) argv.push_back(x.data());
  argv.push_back(nullptr);
  // The executable's own path, not /proc/self/exe, so that the threads keep its name.
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  setenv("GOMP_SPINCOUNT", want.c_str(), 1);
  std::fflush(nullptr);
  execv(exe, argv.data());
  std::fprintf(stderr,
               "headwise serve: could not restart with GOMP_SPINCOUNT=%s (%s); libgomp's default spin applies\n",
               want.c_str(), std::strerror(errno));
}

void usage(std::FILE* f) {
  std::string names;
  for (const std::string& n : Model::synthetic_names()) names += (names.empty() ? "" : ", ") + n;
  std::fprintf(f,
      "usage: headwise serve MODEL|--synthetic NAME [options]\n"
      "  MODEL                model.json, a folder with model.json, a GGUF file, a Hugging Face\n"
      "                       folder (config.json + safetensors), or a llama2.c checkpoint .bin\n"
      "  --tokenizer FILE     tokenizer.bin (required with a .bin checkpoint)\n"
      "  --synthetic NAME     a model with seeded random weights instead: %s\n"
      "  --seed S             weights seed of --synthetic (default 1, as 'headwise bench')\n"
      "  --host ADDR          address to bind (default 127.0.0.1: local only)\n"
      "  --port P             port (default 8080; 0: any free port, printed on stdout)\n"
      "  --threads N          compute threads (default: all cores)\n"
      "  --max-sessions S     sequences generated at once, one KV cache each (default 4)\n"
      "  --max-context C      positions per session (default: the model's context)\n"
      "  --kv-type T          KV cache element type: f32 | f16 | bf16 (default f32)\n"
      "  --queue Q            requests waiting beyond those; more get 429 (default 16)\n"
      "  --prefill-chunk T    prompt tokens prefilled per scheduler step (default 256)\n"
      "  --prefill-chunk-decoding T\n"
      "                       ... while other sequences are decoding, whose gap between\n"
      "                       tokens each such step lengthens (default: --prefill-chunk;\n"
      "                       smaller bounds the tail of the gaps when clients join, at\n"
      "                       a pass over the weights per chunk)\n"
      "  --api-key KEY        require 'Authorization: Bearer KEY' on /v1/* (default: the\n"
      "                       HEADWISE_API_KEY environment variable, else none)\n"
      "  --timeout SEC        bound on a request from arrival, queue included (default 600; 0: none)\n"
      "  --shutdown-grace SEC on SIGTERM, time running generations get to finish (default 10)\n"
      "  --max-body BYTES     largest request body (default 1048576; larger: 413)\n"
      "  --chat-template T    chatml, llama3 or llama2: render chat with this template\n"
      "                       (default: recognised in the model's own template; none there:\n"
      "                       /v1/chat/completions answers 400)\n"
      "  --model-name NAME    the model id clients send (default: the file's name)\n"
      "  --http-threads N     HTTP worker threads (default: sessions + queue + 16)\n"
      "  --omp-spin N         times an OpenMP thread polls at a barrier before it sleeps\n"
      "                       (GOMP_SPINCOUNT; default %d: ~20 us on this project's EPYC, more\n"
      "                       where PAUSE is slower; applied unless GOMP_SPINCOUNT or\n"
      "                       OMP_WAIT_POLICY is set; libgomp's\n"
      "                       own default is 300000, ~6 ms: see the note in cmd_serve.cpp)\n",
      names.c_str(), kDefaultOmpSpin);
}

int usage_error(const std::string& m) {
  std::fprintf(stderr, "headwise serve: %s\n", m.c_str());
  usage(stderr);
  return 2;
}

std::string stem(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.find_last_of('/');
  std::string base = slash == std::string::npos ? p : p.substr(slash + 1);
  if (base == "model.json" && slash != std::string::npos) return stem(p.substr(0, slash));
  const size_t dot = base.rfind('.');
  if (dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return base;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  server::prepare_signals();  // before the model load starts OpenMP's threads
  Args a;
  if (!a.parse(argc, argv, {"help"},
               {"tokenizer", "synthetic", "seed", "host", "port", "threads", "max-sessions", "max-context", "queue",
                "prefill-chunk", "prefill-chunk-decoding", "api-key", "timeout", "shutdown-grace", "max-body",
                "chat-template", "model-name", "http-threads", "kv-type", "omp-spin"}))
    return usage_error(a.error());
  if (a.has("help")) {
    usage(stdout);
    return 0;
  }
  const bool synthetic = a.has("synthetic");
  if (synthetic == (a.positional().size() == 1) || a.positional().size() > 1)
    return usage_error("give one MODEL or --synthetic NAME");
  server::ServeOptions o;
  o.host = a.str("host", "127.0.0.1");
  const long long port = a.integer("port", 8080);
  const long long threads = a.integer("threads", 0);
  const long long sessions = a.integer("max-sessions", 4);
  const long long context = a.integer("max-context", 0);
  const long long queue = a.integer("queue", 16);
  const long long chunk = a.integer("prefill-chunk", 256);
  const long long decode_chunk = a.integer("prefill-chunk-decoding", chunk);
  const long long seed = a.integer("seed", 1);
  const long long max_body = a.integer("max-body", 1 << 20);
  const long long http_threads = a.integer("http-threads", 0);
  const long long omp_spin = a.integer("omp-spin", kDefaultOmpSpin);
  o.timeout_s = a.number("timeout", 600);
  o.shutdown_grace_s = a.number("shutdown-grace", 10);
  if (!a.ok()) return usage_error(a.error());
  if (port < 0 || port > 65535) return usage_error("--port must be in [0, 65535]");
  if (threads < 0 || threads > 1024) return usage_error("--threads must be in [0, 1024]");
  if (sessions < 1 || sessions > 1024) return usage_error("--max-sessions must be in [1, 1024]");
  if (context < 0 || context > (1 << 24)) return usage_error("--max-context must be >= 0");
  if (queue < 0 || queue > 100000) return usage_error("--queue must be in [0, 100000]");
  if (chunk < 1 || chunk > 65536) return usage_error("--prefill-chunk must be in [1, 65536]");
  if (decode_chunk < 1 || decode_chunk > 65536) return usage_error("--prefill-chunk-decoding must be in [1, 65536]");
  if (max_body < 1024 || max_body > (1LL << 30)) return usage_error("--max-body must be in [1024, 2^30]");
  if (http_threads < 0 || http_threads > 4096) return usage_error("--http-threads must be in [0, 4096]");
  if (omp_spin < 0 || omp_spin > (1LL << 40)) return usage_error("--omp-spin must be in [0, 2^40]");
  if (!(o.timeout_s >= 0) || !(o.shutdown_grace_s >= 0) || o.shutdown_grace_s > 3600)
    return usage_error("--timeout and --shutdown-grace must be >= 0 (grace at most 3600)");
  o.port = static_cast<int>(port);
  o.max_body_bytes = static_cast<size_t>(max_body);
  o.http_threads = static_cast<int>(http_threads);
  o.scheduler.threads = static_cast<int>(threads);
  o.scheduler.max_sessions = static_cast<int>(sessions);
  o.scheduler.max_context = static_cast<int>(context);
  o.scheduler.queue = static_cast<int>(queue);
  o.scheduler.prefill_chunk = static_cast<int>(chunk);
  o.scheduler.decode_prefill_chunk = static_cast<int>(decode_chunk);
  if (a.has("kv-type") && !parse_kv_type(a.str("kv-type"), &o.scheduler.kv_type))
    return usage_error("--kv-type '" + a.str("kv-type") + "' is not one of f32, f16, bf16");
  o.api_key = a.str("api-key");
  if (!a.has("api-key"))
    if (const char* env = std::getenv("HEADWISE_API_KEY")) o.api_key = env;
  if (a.has("chat-template")) {
    o.chat_template = server::chat_template_from_name(a.str("chat-template"));
    if (o.chat_template == server::ChatTemplate::none)
      return usage_error("--chat-template must be chatml, llama3 or llama2, got '" + a.str("chat-template") + "'");
  }

  ensure_omp_spin(a.has("omp-spin"), omp_spin);  // before any OpenMP thread starts

  // The model is loaded (weights generated, converted, repacked in OpenMP loops) on a
  // thread that exits before serving, so that its OpenMP worker pool goes with it: the
  // scheduler thread must be the only one with a pool. libgomp counts the workers of
  // every pool against the cores, and with more of them than cores it spins only ~100
  // times at a barrier before sleeping in the kernel, so each of the ~100 parallel
  // regions of a decode step would pay a sleep and a wake-up (measured: ~130 sleeps per
  // token, half of `headwise run`'s one-client decode rate on 2 cores). tests/server/omp_pool_test.mjs checks this. An exception (an
  // allocation) is rethrown here, where headwise's main turns it into a message.
  std::shared_ptr<const Model> model;
  Status s;
  std::exception_ptr thrown;
  std::thread loader([&] {
    try {
      if (synthetic) {
        s = Model::synthetic(a.str("synthetic"), static_cast<uint64_t>(seed), &model);
      } else {
        ModelOptions mo;
        mo.tokenizer = a.str("tokenizer");
        s = Model::load(a.positional()[0], mo, &model);
      }
    } catch (...) {
      thrown = std::current_exception();
    }
  });
  loader.join();
  if (thrown) std::rethrow_exception(thrown);
  o.model_name = synthetic ? a.str("synthetic") : stem(a.positional()[0]);
  if (!s.ok()) {
    std::fprintf(stderr, "headwise serve: %s\n", s.message().c_str());
    return 1;
  }
  if (context > model->info().max_seq_len)
    return usage_error("--max-context " + std::to_string(context) + " is larger than the model's context of " +
                       std::to_string(model->info().max_seq_len));
  if (a.has("model-name")) o.model_name = a.str("model-name");
  // End of generation, as `headwise run` decides it: the checkpoint's ids (GGUF/HF),
  // with the tokenizer's end-of-turn ids; llama2.c models end a text with BOS.
  const ModelInfo& info = model->info();
  const Tokenizer* tok = model->tokenizer();
  if (info.eos_ids.empty()) {
    o.scheduler.end_tokens = {Tokenizer::kBos};
  } else {
    o.scheduler.end_tokens.insert(info.eos_ids.begin(), info.eos_ids.end());
    if (tok) o.scheduler.end_tokens.insert(tok->eos_ids().begin(), tok->eos_ids().end());
  }
  // The chat template: forced by --chat-template, else recognised in the model's own.
  if (!a.has("chat-template") && tok) {
    o.model_chat_template = tok->chat_template();
    o.chat_template = server::detect_chat_template(o.model_chat_template);
  }
  return server::serve(model, o);
}

}  // namespace headwise::tools
