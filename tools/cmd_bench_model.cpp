// headwise bench MODEL|--synthetic NAME — end-to-end throughput of a model: one prompt
// prefilled in one pass, then tokens decoded one at a time, reported as tokens/s
// (median, min, max over repeats) with a per-op breakdown against this machine's
// measured limits (headwise::measure_peak).
//
// What is timed, and why it can be trusted:
//  - The headline tokens/s come from unprofiled sessions (SessionOptions.profile off),
//    so the per-op clock reads cost them nothing. Each timed repeat is followed by a
//    profiled one (per-op tables, trace); their tokens/s, next to the headline, are the
//    "profiling overhead".
//  - Each step's wall time minus the sum of its ops is "outside ops": what the graph
//    executor itself costs (dispatch, bookkeeping), so the op shares add up to 100%.
//  - Prompts are seeded random token ids; each decoded token is the argmax of the
//    previous logits (greedy), so a run does the same work every time. Only the
//    prefill/decode calls are timed, not the argmax between them.
//  - cpu/wall of the timed repeats and the peak RSS are printed as evidence that the
//    machine was quiet and the footprint is what the model needs.
//
// Per-op work (runtime/executor.cpp): linear/logits 2·rows·K·N flops and K·N·4 weight
// bytes per call; attention 4·heads·head_dim·(query,key pairs) flops and 2·Tk·kv_heads·
// head_dim·4 K/V bytes per sequence. Other ops count no work.
//
// The steps live in named functions (tools/bench_model.hpp): options and loading here,
// the measurement in bench_model_measure.cpp, the reports in bench_model_report.cpp.
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "headwise/attention.hpp"
#include "tools/args.hpp"
#include "tools/bench_model.hpp"
#include "tools/bench_weights.hpp"

namespace headwise::tools {
namespace {

using namespace bench_model;  // NOLINT: the command and its parts

void usage(std::FILE* f) {
  std::string names;
  for (const std::string& n : Model::synthetic_names()) names += (names.empty() ? "" : ", ") + n;
  std::fprintf(f,
      "usage: headwise bench MODEL|--synthetic NAME [options]\n"
      "       headwise bench attention [options]   (the attention kernel alone)\n"
      "Prefills a random prompt in one pass, then decodes tokens one at a time (each the\n"
      "argmax of the previous logits); reports tokens/s and a per-op profile.\n"
      "  MODEL             model.json, a folder with model.json, or a llama2.c .bin\n"
      "  --synthetic NAME  a model with seeded random weights: %s\n"
      "  --seed S          weights of --synthetic and the prompt's token ids (default 1)\n"
      "  --weights TYPE    --synthetic's matrices quantized at load: bf16|f16|q8_0|q4_0|\n"
      "                    q2_k|q3_k|q4_k|q5_k|q6_k|q3_k_m|q4_k_m|q5_k_m|iq4_xs\n"
      "                    (types per tensor as `headwise convert`)\n"
      "  --tokenizer FILE  tokenizer.bin for MODEL (not needed: prompts are token ids)\n"
      "  --prompt-len P    prompt tokens, prefilled in one pass (default 128)\n"
      "  --gen-len G       tokens decoded after the prompt (default 32)\n"
      "  --batch B         also decode B sessions together (Session::decode_batch) and\n"
      "                    one at a time, and compare (default 1: no batch section)\n"
      "  --threads N       OpenMP threads (default: all, %d here)\n"
      "  --kv-type T       KV cache element type: f32 | f16 | bf16 (default f32)\n"
      "  --warmup W        untimed repeats first (default 1)\n"
      "  --repeat R        timed repeats; median, min and max are reported (default 3)\n"
      "  --by-layer        per-op tables list every node instead of one row per op kind\n"
      "  --trace FILE      write every op call of the profiled repeats (one per timed\n"
      "                    repeat) as Chrome trace-event JSON (Perfetto, chrome://tracing)\n"
      "  --no-peak         skip measuring the machine peak (saves ~2 s and 256 MiB)\n"
      "  --json            print one JSON document instead of text\n"
      "  --progress        progress on stderr even when it is not a terminal\n"
      "  --help            this text\n",
      names.c_str(), omp_get_max_threads());
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n('%s --help' lists the options)\n", kName, msg.c_str(), kName);
  return 2;
}

int runtime_error(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", kName, msg.c_str());
  return 1;
}

constexpr int kContinue = -1;  // parse_options: go on and measure

// --synthetic NAME or one MODEL path, and what goes with each.
int check_model_choice(const Args& args, BenchOptions* o) {
  o->synthetic = args.has("synthetic");
  o->synth = args.str("synthetic");
  o->tokenizer = args.str("tokenizer");
  if (o->synthetic == !args.positional().empty())
    return usage_error(o->synthetic ? "give MODEL or --synthetic NAME, not both"
                                    : "give a MODEL path or --synthetic NAME");
  if (args.positional().size() > 1) return usage_error("one MODEL at most, got " + std::to_string(args.positional().size()));
  if (!o->synthetic) {
    o->model_path = args.positional()[0];
    return kContinue;
  }
  const std::vector<std::string> names = Model::synthetic_names();
  if (std::find(names.begin(), names.end(), o->synth) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    return usage_error("unknown synthetic model '" + o->synth + "' (known: " + known + ")");
  }
  if (args.has("tokenizer")) return usage_error("--tokenizer applies to a MODEL path, not --synthetic");
  return kContinue;
}

int check_ranges(const BenchOptions& o) {
  auto in_range = [](const char* name, long long v, long long lo) -> std::string {
    if (v < lo || v > INT_MAX)
      return std::string("--") + name + " must be in " + std::to_string(lo) + ".." +
             std::to_string(INT_MAX) + ", got " + std::to_string(v);
    return "";
  };
  for (const std::string& err :
       {in_range("prompt-len", o.P, 1), in_range("gen-len", o.G, 1), in_range("batch", o.B, 1),
        in_range("threads", o.threads, 1), in_range("warmup", o.warmup, 0), in_range("repeat", o.repeat, 1),
        in_range("seed", o.seed, 0)})
    if (!err.empty()) return usage_error(err);
  if (o.threads > kMaxThreads) return usage_error("--threads must be at most " + std::to_string(kMaxThreads));
  return kContinue;
}

// Fills *o from the command line; returns kContinue, or the exit code (0 for --help).
int parse_options(int argc, char** argv, BenchOptions* o) {
  Args args;
  if (!args.parse(argc, argv, {"json", "no-peak", "by-layer", "progress", "help"},
                  {"synthetic", "seed", "tokenizer", "prompt-len", "gen-len", "batch", "threads",
                   "warmup", "repeat", "trace", "kv-type", "weights"}))
    return usage_error(args.error());
  if (args.has("help")) {
    usage(stdout);
    return 0;
  }
  o->seed = args.integer("seed", 1);
  o->P = args.integer("prompt-len", 128);
  o->G = args.integer("gen-len", 32);
  o->B = args.integer("batch", 1);
  o->threads = args.integer("threads", omp_get_max_threads());
  o->warmup = args.integer("warmup", 1);
  o->repeat = args.integer("repeat", 3);
  if (!args.ok()) return usage_error(args.error());
  if (args.has("kv-type") && !parse_kv_type(args.str("kv-type"), &o->kv_type))
    return usage_error("--kv-type '" + args.str("kv-type") + "' is not one of f32, f16, bf16");
  if (int rc = check_model_choice(args, o); rc != kContinue) return rc;
  if (const std::string e = bench_weights_error(args, o->synthetic); !e.empty()) return usage_error(e);
  o->weights = args.str("weights");
  if (int rc = check_ranges(*o); rc != kContinue) return rc;
  o->json = args.has("json");
  o->by_layer = args.has("by-layer");
  o->progress = args.has("progress");
  o->with_peak = !args.has("no-peak");
  o->trace_path = args.str("trace");
  if (args.has("trace") && o->trace_path.empty()) return usage_error("--trace needs a file name");
  return kContinue;
}

// Loads the model (timed) and opens one session per batch member plus a profiled one;
// returns kContinue or the exit code.
int load_and_open(const BenchOptions& o, Progress* progress, Bench* b, Measured* m) {
  progress->say(true, "loading %s", o.synthetic ? ("--synthetic " + o.synth).c_str() : o.model_path.c_str());
  const auto t_load = Clock::now();
  Status s;
  if (o.synthetic) {
    s = load_bench_synthetic(o.weights, o.synth, uint64_t(o.seed), &b->model, &m->weight_types);
  } else {
    ModelOptions mo;
    mo.tokenizer = o.tokenizer;
    s = Model::load(o.model_path, mo, &b->model);
  }
  if (!s.ok()) {
    progress->clear();
    return runtime_error(s.message());
  }
  m->load_s = seconds(t_load, Clock::now());
  if (!o.synthetic) m->stored_mix = stored_weights_mix(b->model->plan(), &m->weight_types);
  m->info = b->model->info();
  if (o.P + o.G > m->info.max_seq_len) {
    progress->clear();
    return usage_error("--prompt-len + --gen-len = " + std::to_string(o.P + o.G) + " exceeds the context of " +
                       m->info.name + " (" + std::to_string(m->info.max_seq_len) + " positions)");
  }
  SessionOptions so;
  so.threads = int(o.threads);
  so.max_context = int(o.P + o.G);
  so.max_chunk = int(o.P);  // the whole prompt in one pass
  so.kv_type = o.kv_type;
  b->sessions.resize(o.B);
  for (auto& session : b->sessions)
    if (Status st = b->model->open_session(so, &session); !st.ok()) return runtime_error(st.message());
  so.profile = true;
  if (Status st = b->model->open_session(so, &b->prof_session); !st.ok()) return runtime_error(st.message());
  // Read now: the sessions are released before the peak probe runs.
  m->kv_bytes_per_token = b->sessions[0]->kv_bytes_per_token();
  m->kv_cache_bytes = b->sessions[0]->kv_cache_bytes();
  return kContinue;
}

}  // namespace

int cmd_bench_model(int argc, char** argv) {
  BenchOptions o;
  if (int rc = parse_options(argc, argv, &o); rc != kContinue) return rc;
  Progress progress(o.progress);
  // Open the trace file first: a bad path should fail before minutes of measuring.
  std::FILE* trace_file = nullptr;
  if (!o.trace_path.empty() && !(trace_file = std::fopen(o.trace_path.c_str(), "w")))
    return runtime_error("cannot write the trace to " + o.trace_path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> trace_closer(trace_file, [](std::FILE* f) {
    return f ? std::fclose(f) : 0;
  });

  Bench bench;
  Measured m;
  if (int rc = load_and_open(o, &progress, &bench, &m); rc != kContinue) return rc;
  if (Status st = measure(o, trace_file != nullptr, &bench, &progress, &m); !st.ok()) {
    progress.clear();
    return runtime_error(st.message());
  }
  const Figures f = derive(o, &m);
  if (trace_file) {
    const bool ok = write_trace(trace_file, m);
    if (std::fclose(trace_closer.release()) != 0 || !ok) return runtime_error("cannot write the trace to " + o.trace_path);
  }
  if (o.json) print_json(o, m, f);
  else print_text(o, m, f);
  return 0;
}

}  // namespace headwise::tools
