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
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headwise/attention.hpp"
#include "headwise/model.hpp"
#include "bench/probe/peak.hpp"
#include "tools/args.hpp"
#include "tools/process_stats.hpp"

namespace headwise::tools {
namespace {

constexpr const char* kName = "headwise bench";

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

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Stats {
  double min = 0, median = 0, max = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return {};
  return {v.front(), n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.back()};
}

// --- JSON, written by hand like bench attention's (the CLI does not link a JSON library)

std::string jnum(double v, bool valid = true) {
  if (!valid) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string jstr(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else {
      r += char(c);
    }
  }
  return r + "\"";
}

using Fields = std::vector<std::pair<std::string, std::string>>;  // key, JSON value

std::string jobj(const Fields& f) {
  std::string r = "{";
  for (size_t i = 0; i < f.size(); ++i) r += (i ? ", " : "") + jstr(f[i].first) + ": " + f[i].second;
  return r + "}";
}

std::string jarr(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string r = "[";
  for (size_t i = 0; i < items.size(); ++i) r += (i ? sep : "") + items[i];
  return r + "]";
}

std::string jstats(const Stats& s) {
  return jobj({{"min", jnum(s.min)}, {"median", jnum(s.median)}, {"max", jnum(s.max)}});
}

// --- progress on stderr: one rewritten line on a terminal, a few plain lines otherwise

class Progress {
 public:
  Progress(bool forced) : tty_(isatty(STDERR_FILENO) != 0), on_(tty_ || forced) {}
  // Rewrites the line on a terminal; elsewhere prints only `milestone` lines.
  void say(bool milestone, const char* fmt, ...) {
    if (!on_ || (!tty_ && !milestone)) return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (tty_) std::fprintf(stderr, "\r%-70s", buf);
    else std::fprintf(stderr, "%s: %s\n", kName, buf);
    dirty_ = tty_;
  }
  void clear() {
    if (dirty_) std::fprintf(stderr, "\r%-70s\r", "");
    dirty_ = false;
  }

 private:
  bool tty_, on_, dirty_ = false;
};

int32_t argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

// Seeded token ids in [0, vocab), splitmix64.
std::vector<int32_t> random_tokens(uint64_t seed, int n, int vocab) {
  std::vector<int32_t> t(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  for (int i = 0; i < n; ++i) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    t[i] = int32_t((z ^ (z >> 31)) % uint64_t(vocab));
  }
  return t;
}

// --- the runs -------------------------------------------------------------------------

struct Phase {                  // prefill or decode over the profiled repeats
  std::vector<OpTiming> nodes;  // per plan node, summed
  double wall_s = 0;            // sum of the calls' wall time
  int steps = 0;                // calls of prefill() / decode()
};

void accumulate(const std::vector<OpTiming>& t, std::vector<OpTiming>* sum) {
  if (sum->empty()) {
    *sum = t;
    return;
  }
  for (size_t i = 0; i < t.size() && i < sum->size(); ++i) {
    (*sum)[i].calls += t[i].calls;
    (*sum)[i].seconds += t[i].seconds;
    (*sum)[i].flops += t[i].flops;
    (*sum)[i].bytes += t[i].bytes;
  }
}

// Chrome trace events of one prefill/decode call; `start_us` is when the call began on
// the run's timeline, the events' own times are relative to their step's start.
void add_trace(const Session& s, size_t from, double start_us, const char* cat, int step,
               std::vector<std::string>* out) {
  const std::vector<TraceEvent>& ev = s.trace();
  const std::vector<OpTiming>& t = s.timings();
  for (size_t i = from; i < ev.size(); ++i) {
    const OpTiming& n = t[ev[i].node];
    const std::string name = n.layer >= 0 ? n.op + " L" + std::to_string(n.layer) : n.op;
    char ts[96];
    std::snprintf(ts, sizeof ts, "\"ts\": %.3f, \"dur\": %.3f", start_us + ev[i].start_us,
                  std::max(0.0, ev[i].dur_us));
    out->push_back("{\"name\": " + jstr(name) + ", \"cat\": \"" + cat + "\", \"ph\": \"X\", " + ts +
                   ", \"pid\": 1, \"tid\": 1, \"args\": " +
                   jobj({{"node", std::to_string(ev[i].node)}, {"where", jstr(n.where)},
                         {"rows", std::to_string(ev[i].rows)}, {"step", std::to_string(step)}}) +
                   "}");
  }
}

struct Runner {
  const std::vector<int32_t>& prompt;
  int gen = 0;
  Progress* progress = nullptr;

  // One unprofiled repeat; returns prefill and decode seconds (decode: all G calls).
  Status timed(Session* s, const char* label, double* prefill_s, double* decode_s) const {
    s->reset();
    progress->say(false, "[%s] prefill %zu tokens", label, prompt.size());
    auto t0 = Clock::now();
    HW_RETURN_IF_ERROR(s->prefill(prompt));
    *prefill_s = seconds(t0, Clock::now());
    *decode_s = 0;
    int32_t tok = argmax(s->logits(), s->model().info().vocab_size);
    for (int g = 0; g < gen; ++g) {
      if (g % 8 == 0) progress->say(false, "[%s] decode %d/%d", label, g, gen);
      t0 = Clock::now();
      HW_RETURN_IF_ERROR(s->decode(tok));
      *decode_s += seconds(t0, Clock::now());
      tok = argmax(s->logits(), s->model().info().vocab_size);
    }
    return Status::Ok();
  }

  // One profiled repeat: per-node timings into `pre`/`dec`, trace events (if `trace`)
  // placed on a timeline that starts at `origin`.
  Status profiled(Session* s, Clock::time_point origin, Phase* pre, Phase* dec,
                  std::vector<std::string>* trace) const {
    auto us = [&](Clock::time_point t) { return seconds(origin, t) * 1e6; };
    s->reset();
    s->clear_profile();
    progress->say(false, "[profiled] prefill %zu tokens", prompt.size());
    auto t0 = Clock::now();
    HW_RETURN_IF_ERROR(s->prefill(prompt));
    pre->wall_s += seconds(t0, Clock::now());
    pre->steps += 1;
    accumulate(s->timings(), &pre->nodes);
    if (trace) add_trace(*s, 0, us(t0), "prefill", 0, trace);
    s->clear_profile();

    const int V = s->model().info().vocab_size;
    int32_t tok = argmax(s->logits(), V);
    for (int g = 0; g < gen; ++g) {
      if (g % 8 == 0) progress->say(false, "[profiled] decode %d/%d", g, gen);
      const size_t from = s->trace().size();
      t0 = Clock::now();
      HW_RETURN_IF_ERROR(s->decode(tok));
      dec->wall_s += seconds(t0, Clock::now());
      dec->steps += 1;
      if (trace) add_trace(*s, from, us(t0), "decode", g, trace);
      tok = argmax(s->logits(), V);
    }
    // Accumulated over the G calls and cleared once: clearing per call would make the
    // next call rebuild the table, a cost that is not the model's.
    accumulate(s->timings(), &dec->nodes);
    s->clear_profile();
    return Status::Ok();
  }
};

// --- per-op tables -------------------------------------------------------------------

struct Row {
  std::string op, where;  // where: the node (by-layer) or empty (aggregated)
  int node = -1, layer = -1, nodes = 0, calls = 0;
  int block_nodes = 0;    // nodes inside the layer blocks (the rest: embed and head)
  double seconds = 0, flops = 0, bytes = 0;
};

std::vector<Row> table(const Phase& p, bool by_layer) {
  std::vector<Row> rows;
  std::map<std::string, size_t> index;
  for (const OpTiming& t : p.nodes) {
    if (t.calls == 0) continue;
    Row* r;
    if (by_layer) {
      rows.push_back({t.op, t.where, t.node, t.layer});
      r = &rows.back();
    } else {
      auto it = index.find(t.op);
      if (it == index.end()) {
        it = index.emplace(t.op, rows.size()).first;
        Row k;
        k.op = t.op;
        rows.push_back(k);
      }
      r = &rows[it->second];
    }
    r->nodes += 1;
    r->block_nodes += t.layer >= 0;
    r->calls += t.calls;
    r->seconds += t.seconds;
    r->flops += t.flops;
    r->bytes += t.bytes;
  }
  if (!by_layer)
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  return rows;
}

struct Limits {
  double fma = 0, read = 0;  // GFLOP/s, GB/s; 0 = not measured
};

double op_seconds(const Phase& p) {
  double s = 0;
  for (const OpTiming& t : p.nodes) s += t.seconds;
  return s;
}

std::string phase_json(const Phase& p, bool by_layer, bool decode, const Limits& lim) {
  std::vector<std::string> items;
  for (const Row& r : table(p, by_layer)) {
    const double gflops = r.seconds > 0 ? r.flops / r.seconds / 1e9 : 0;
    const double gbps = r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0;
    Fields f = {{"op", jstr(r.op)}};
    if (by_layer) {
      f.push_back({"node", std::to_string(r.node)});
      f.push_back({"layer", std::to_string(r.layer)});
      f.push_back({"where", jstr(r.where)});
    }
    f.insert(f.end(), {{"nodes", std::to_string(r.nodes)}, {"block_nodes", std::to_string(r.block_nodes)},
                       {"calls", std::to_string(r.calls)},
                       {"ms", jnum(r.seconds * 1e3)},
                       {"share_pct", jnum(p.wall_s > 0 ? 100 * r.seconds / p.wall_s : 0)},
                       {"flops", jnum(r.flops)}, {"bytes", jnum(r.bytes)},
                       {"gflops", jnum(gflops, r.flops > 0)},
                       {"pct_peak", jnum(lim.fma > 0 ? 100 * gflops / lim.fma : 0, r.flops > 0 && lim.fma > 0)}});
    if (decode) {
      f.push_back({"gbps", jnum(gbps, r.bytes > 0)});
      f.push_back({"pct_bw", jnum(lim.read > 0 ? 100 * gbps / lim.read : 0, r.bytes > 0 && lim.read > 0)});
    }
    items.push_back(jobj(f));
  }
  return jarr(items, ",\n    ");
}

void print_phase(const char* title, const Phase& p, int rows_per_step, int repeats, bool by_layer,
                 bool decode, const Limits& lim) {
  std::printf("\n%s per op: %d profiled repeat%s, %d step%s of %d row%s, %.3f ms wall\n", title,
              repeats, repeats == 1 ? "" : "s", p.steps, p.steps == 1 ? "" : "s", rows_per_step,
              rows_per_step == 1 ? "" : "s", p.wall_s * 1e3);
  const int w = by_layer ? 34 : 12;
  std::printf("%-*s %7s %10s %7s %9s %7s", w, "op", "calls", "total ms", "share", "GFLOP/s", "%peak");
  if (decode) std::printf(" %8s %6s", "GB/s", "%bw");
  std::printf("\n");
  auto pct = [](double v, bool valid) {
    char b[16];
    if (valid) std::snprintf(b, sizeof b, "%.1f%%", v);
    else std::snprintf(b, sizeof b, "-");
    return std::string(b);
  };
  for (const Row& r : table(p, by_layer)) {
    const double gflops = r.seconds > 0 ? r.flops / r.seconds / 1e9 : 0;
    const double gbps = r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0;
    std::string label = by_layer ? std::to_string(r.node) + " " + r.where : r.op;
    if (int(label.size()) > w) label.resize(w);
    char g[16] = "-";
    if (r.flops > 0) std::snprintf(g, sizeof g, "%.1f", gflops);
    std::printf("%-*s %7d %10.3f %7s %9s %7s", w, label.c_str(), r.calls, r.seconds * 1e3,
                pct(p.wall_s > 0 ? 100 * r.seconds / p.wall_s : 0, true).c_str(), g,
                pct(lim.fma > 0 ? 100 * gflops / lim.fma : 0, r.flops > 0 && lim.fma > 0).c_str());
    if (decode) {
      char b[16] = "-";
      if (r.bytes > 0) std::snprintf(b, sizeof b, "%.1f", gbps);
      std::printf(" %8s %6s", b, pct(lim.read > 0 ? 100 * gbps / lim.read : 0, r.bytes > 0 && lim.read > 0).c_str());
    }
    std::printf("\n");
  }
  const double outside = p.wall_s - op_seconds(p);
  std::printf("%-*s %7s %10.3f %7s   (step wall time minus its ops: the executor's own cost)\n", w,
              "outside ops", "", outside * 1e3, pct(p.wall_s > 0 ? 100 * outside / p.wall_s : 0, true).c_str());
}

// Work of the GEMMs (linear + logits) of a phase.
void gemm_work(const Phase& p, double* flops, double* secs) {
  *flops = *secs = 0;
  for (const OpTiming& t : p.nodes)
    if (t.op == "linear" || t.op == "logits") {
      *flops += t.flops;
      *secs += t.seconds;
    }
}

double bytes_of(const Phase& p) {
  double b = 0;
  for (const OpTiming& t : p.nodes) b += t.bytes;
  return b;
}

}  // namespace

int cmd_bench_model(int argc, char** argv) {
  Args args;
  if (!args.parse(argc, argv, {"json", "no-peak", "by-layer", "progress", "help"},
                  {"synthetic", "seed", "tokenizer", "prompt-len", "gen-len", "batch", "threads",
                   "warmup", "repeat", "trace", "kv-type"}))
    return usage_error(args.error());
  if (args.has("help")) {
    usage(stdout);
    return 0;
  }
  const long long seed = args.integer("seed", 1);
  const long long P = args.integer("prompt-len", 128);
  const long long G = args.integer("gen-len", 32);
  const long long B = args.integer("batch", 1);
  const long long threads = args.integer("threads", omp_get_max_threads());
  const long long warmup = args.integer("warmup", 1);
  const long long repeat = args.integer("repeat", 3);
  if (!args.ok()) return usage_error(args.error());
  KvType kv_type = KvType::f32;
  if (args.has("kv-type") && !parse_kv_type(args.str("kv-type"), &kv_type))
    return usage_error("--kv-type '" + args.str("kv-type") + "' is not one of f32, f16, bf16");

  const bool synthetic = args.has("synthetic");
  const std::string synth = args.str("synthetic");
  if (synthetic == !args.positional().empty())
    return usage_error(synthetic ? "give MODEL or --synthetic NAME, not both"
                                 : "give a MODEL path or --synthetic NAME");
  if (args.positional().size() > 1) return usage_error("one MODEL at most, got " + std::to_string(args.positional().size()));
  if (synthetic) {
    const std::vector<std::string> names = Model::synthetic_names();
    if (std::find(names.begin(), names.end(), synth) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      return usage_error("unknown synthetic model '" + synth + "' (known: " + known + ")");
    }
    if (args.has("tokenizer")) return usage_error("--tokenizer applies to a MODEL path, not --synthetic");
  }
  auto in_range = [](const char* name, long long v, long long lo) -> std::string {
    if (v < lo || v > INT_MAX)
      return std::string("--") + name + " must be in " + std::to_string(lo) + ".." +
             std::to_string(INT_MAX) + ", got " + std::to_string(v);
    return "";
  };
  for (const std::string& err :
       {in_range("prompt-len", P, 1), in_range("gen-len", G, 1), in_range("batch", B, 1),
        in_range("threads", threads, 1), in_range("warmup", warmup, 0), in_range("repeat", repeat, 1),
        in_range("seed", seed, 0)})
    if (!err.empty()) return usage_error(err);
  if (threads > kMaxThreads) return usage_error("--threads must be at most " + std::to_string(kMaxThreads));
  const bool json = args.has("json"), by_layer = args.has("by-layer");
  const std::string trace_path = args.str("trace");
  if (args.has("trace") && trace_path.empty()) return usage_error("--trace needs a file name");
  Progress progress(args.has("progress"));

  // Open the trace file first: a bad path should fail before minutes of measuring.
  std::FILE* trace_file = nullptr;
  if (!trace_path.empty() && !(trace_file = std::fopen(trace_path.c_str(), "w")))
    return runtime_error("cannot write the trace to " + trace_path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> trace_closer(trace_file, [](std::FILE* f) {
    return f ? std::fclose(f) : 0;
  });

  // --- load
  progress.say(true, "loading %s", synthetic ? ("--synthetic " + synth).c_str() : args.positional()[0].c_str());
  const auto t_load = Clock::now();
  std::shared_ptr<const Model> model;
  {
    Status s;
    if (synthetic) {
      s = Model::synthetic(synth, uint64_t(seed), &model);
    } else {
      ModelOptions mo;
      mo.tokenizer = args.str("tokenizer");
      s = Model::load(args.positional()[0], mo, &model);
    }
    if (!s.ok()) {
      progress.clear();
      return runtime_error(s.message());
    }
  }
  const double load_s = seconds(t_load, Clock::now());
  const ModelInfo& info = model->info();
  if (P + G > info.max_seq_len) {
    progress.clear();
    return usage_error("--prompt-len + --gen-len = " + std::to_string(P + G) + " exceeds the context of " +
                       info.name + " (" + std::to_string(info.max_seq_len) + " positions)");
  }

  // --- sessions: one per batch member (the first also runs the single-sequence repeats)
  SessionOptions so;
  so.threads = int(threads);
  so.max_context = int(P + G);
  so.max_chunk = int(P);  // the whole prompt in one pass
  so.kv_type = kv_type;
  std::vector<std::unique_ptr<Session>> sessions(B);
  std::unique_ptr<Session> prof_session;
  for (auto& s : sessions) {
    const Status st = model->open_session(so, &s);
    if (!st.ok()) return runtime_error(st.message());
  }
  {
    SessionOptions po = so;
    po.profile = true;
    const Status st = model->open_session(po, &prof_session);
    if (!st.ok()) return runtime_error(st.message());
  }

  const std::vector<int32_t> prompt = random_tokens(uint64_t(seed), int(P), info.vocab_size);
  const Runner run{prompt, int(G), &progress};
  Session* s0 = sessions[0].get();
  auto fail = [&](const Status& st) {
    progress.clear();
    return runtime_error(st.message());
  };

  // --- timed repeats. Each one runs unprofiled (the headline numbers) and then profiled
  // (the per-op tables and the trace), so both see the machine in the same state: on a
  // shared host memory bandwidth drifts by tens of percent over seconds, and "profiling
  // overhead" must not read that drift as the cost of the per-op clocks.
  char label[64];
  const int prof_repeats = int(repeat);
  Phase pre, dec;
  std::vector<std::string> events;
  for (long long w = 0; w < std::max(1LL, warmup); ++w) {
    // warms both sessions (first steps fault fresh activation pages in)
    std::snprintf(label, sizeof label, "warmup %lld/%lld", w + 1, std::max(1LL, warmup));
    double a, b;
    Status st = run.timed(s0, label, &a, &b);
    Phase scratch_pre, scratch_dec;
    if (st.ok()) st = run.profiled(prof_session.get(), Clock::now(), &scratch_pre, &scratch_dec, nullptr);
    if (!st.ok()) return fail(st);
  }
  std::vector<double> prefill_tps, decode_tps, prefill_ms, decode_ms, read_gbs;
  double timed_cpu = 0, timed_wall = 0;
  const bool with_peak = !args.has("no-peak");
  // The read bandwidth is measured after every timed repeat (its drift on a shared host
  // would otherwise dominate "% of bandwidth"). The probe's 256 MiB are not the model's:
  // its memory high-water mark is taken before they exist, and at the end without them.
  const double rss_before_probe = peak_rss_bytes();
  std::unique_ptr<ReadProbe> read_probe;
  if (with_peak) read_probe = std::make_unique<ReadProbe>(int(threads));
  const auto origin = Clock::now();
  for (long long r = 0; r < repeat; ++r) {
    std::snprintf(label, sizeof label, "repeat %lld/%lld", r + 1, repeat);
    progress.say(true, "%s", label);
    const double cpu0 = cpu_seconds();
    const auto wall0 = Clock::now();
    double a, b;
    Status st = run.timed(s0, label, &a, &b);
    if (!st.ok()) return fail(st);
    timed_cpu += cpu_seconds() - cpu0;
    timed_wall += seconds(wall0, Clock::now());
    prefill_tps.push_back(P / a);
    decode_tps.push_back(G / b);
    prefill_ms.push_back(a * 1e3);
    decode_ms.push_back(b * 1e3 / G);
    if (read_probe) {
      progress.say(true, "read bandwidth after repeat %lld/%lld", r + 1, repeat);
      read_gbs.push_back(read_probe->gbs(4));
    }
    progress.say(true, "profiled repeat %lld/%lld", r + 1, repeat);
    st = run.profiled(prof_session.get(), origin, &pre, &dec, trace_file ? &events : nullptr);
    if (!st.ok()) return fail(st);
  }
  const double cpu_over_wall = timed_wall > 0 ? timed_cpu / timed_wall : 0.0;
  prof_session.reset();

  // --- batch: decode_batch over B sessions vs the same sessions stepped one at a time
  std::vector<double> batched_tps, sequential_tps;
  if (B > 1) {
    std::vector<Session*> ptrs;
    for (auto& s : sessions) ptrs.push_back(s.get());
    std::vector<int32_t> toks(B);
    const int V = info.vocab_size;
    auto prefill_all = [&]() -> Status {
      for (long long b = 0; b < B; ++b) {
        ptrs[b]->reset();
        // a different prompt per sequence, as a server would see
        HW_RETURN_IF_ERROR(ptrs[b]->prefill(random_tokens(uint64_t(seed) + 1000 + b, int(P), V)));
        toks[b] = argmax(ptrs[b]->logits(), V);
      }
      return Status::Ok();
    };
    for (long long r = 0; r < warmup + repeat; ++r) {
      const bool timed = r >= warmup;
      progress.say(true, "batch %lld: %s %lld/%lld", B, timed ? "repeat" : "warmup",
                   timed ? r - warmup + 1 : r + 1, timed ? repeat : warmup);
      Status st = prefill_all();
      if (!st.ok()) return fail(st);
      double tb = 0;
      for (long long g = 0; g < G && st.ok(); ++g) {
        progress.say(false, "[batch %lld] batched decode %lld/%lld", B, g, G);
        const auto t0 = Clock::now();
        st = Session::decode_batch(ptrs.data(), toks.data(), int(B), int(threads));
        tb += seconds(t0, Clock::now());
        for (long long b = 0; b < B; ++b) toks[b] = argmax(ptrs[b]->logits(), V);
      }
      if (st.ok()) st = prefill_all();
      double ts = 0;
      for (long long g = 0; g < G && st.ok(); ++g) {
        progress.say(false, "[batch %lld] sequential decode %lld/%lld", B, g, G);
        for (long long b = 0; b < B && st.ok(); ++b) {
          const auto t0 = Clock::now();
          st = ptrs[b]->decode(toks[b]);
          ts += seconds(t0, Clock::now());
          toks[b] = argmax(ptrs[b]->logits(), V);
        }
      }
      if (!st.ok()) return fail(st);
      if (timed) {
        batched_tps.push_back(double(B) * G / tb);
        sequential_tps.push_back(double(B) * G / ts);
      }
    }
  }
  const double rss = std::max(rss_before_probe,
                              current_rss_bytes() - (read_probe ? double(read_probe->bytes()) : 0.0));
  read_probe.reset();
  sessions.clear();

  MachinePeak peak;
  if (with_peak) {
    progress.say(true, "measuring the machine peak");
    peak = measure_peak(int(threads));
  }
  progress.clear();
  const std::string isa = isa_name();
  Limits lim;
  if (with_peak) {
    lim.fma = peak.fma_gflops(isa, int(threads));
    lim.read = peak.read_gbs(int(threads));
  }

  // --- derived numbers
  const Stats pre_tps = stats(prefill_tps), dec_tps = stats(decode_tps);
  const double prof_pre_tps = pre.wall_s > 0 ? double(P) * prof_repeats / pre.wall_s : 0;
  const double prof_dec_tps = dec.wall_s > 0 ? double(dec.steps) / dec.wall_s : 0;
  // Time per unit of work profiled vs not: how much the per-op clocks cost.
  const double pre_overhead = prof_pre_tps > 0 ? 100.0 * (pre_tps.median / prof_pre_tps - 1) : 0;
  const double dec_overhead = prof_dec_tps > 0 ? 100.0 * (dec_tps.median / prof_dec_tps - 1) : 0;
  double gemm_flops, gemm_s;
  gemm_work(pre, &gemm_flops, &gemm_s);
  const double gemm_gflops = gemm_s > 0 ? gemm_flops / gemm_s / 1e9 : 0;
  // Bytes one decoded token reads (weights + KV cache), at the headline decode rate; its
  // share of the bandwidth is the median over repeats of each repeat's rate against the
  // bandwidth measured right after it.
  const double bytes_per_token = dec.steps > 0 ? bytes_of(dec) / dec.steps : 0;
  const double dec_gbps = bytes_per_token * dec_tps.median / 1e9;
  std::vector<double> pct_bw_runs;
  for (size_t r = 0; r < read_gbs.size() && r < decode_tps.size(); ++r)
    if (read_gbs[r] > 0) pct_bw_runs.push_back(100.0 * bytes_per_token * decode_tps[r] / 1e9 / read_gbs[r]);
  const Stats read_bw = stats(read_gbs), pct_bw = stats(pct_bw_runs);
  if (!read_gbs.empty()) lim.read = read_bw.median;  // the per-op tables use the same figure
  const Stats bat = stats(batched_tps), seq = stats(sequential_tps);
  const double ratio = seq.median > 0 ? bat.median / seq.median : 0;
  auto outside = [](const Phase& p) { return p.wall_s - op_seconds(p); };

  // --- the trace file
  if (trace_file) {
    std::string doc = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    doc += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": " +
           jstr("headwise bench " + info.name) + "}},\n";
    for (size_t i = 0; i < events.size(); ++i) doc += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
    doc += "]}\n";
    const bool ok = std::fwrite(doc.data(), 1, doc.size(), trace_file) == doc.size();
    if (std::fclose(trace_closer.release()) != 0 || !ok) return runtime_error("cannot write the trace to " + trace_path);
  }

  if (json) {
    const Fields model_f = {
        {"name", jstr(info.name)}, {"source", jstr(info.source)}, {"synthetic", synthetic ? "true" : "false"},
        {"vocab_size", std::to_string(info.vocab_size)}, {"d_model", std::to_string(info.d_model)},
        {"n_layers", std::to_string(info.n_layers)}, {"n_heads", std::to_string(info.n_heads)},
        {"n_kv_heads", std::to_string(info.n_kv_heads)}, {"head_dim", std::to_string(info.head_dim)},
        {"max_seq_len", std::to_string(info.max_seq_len)}, {"weight_bytes", std::to_string(info.weight_bytes)},
        {"kv_bytes_per_token", std::to_string(s0->kv_bytes_per_token())},
        {"kv_type", jstr(kv_type_name(kv_type))}, {"load_s", jnum(load_s)}};
    const Fields run_f = {
        {"prompt_len", std::to_string(P)}, {"gen_len", std::to_string(G)}, {"batch", std::to_string(B)},
        {"threads", std::to_string(threads)}, {"cores", std::to_string(omp_get_num_procs())},
        {"warmup", std::to_string(warmup)}, {"repeat", std::to_string(repeat)},
        {"profiled_repeats", std::to_string(prof_repeats)}, {"seed", std::to_string(seed)},
        {"isa", jstr(isa)}, {"prompt", jstr("random token ids")}, {"decode_feed", jstr("argmax")}};
    const Fields machine_f = {
        {"measured", with_peak ? "true" : "false"}, {"threads", std::to_string(threads)},
        {"peak_gflops", jnum(lim.fma, lim.fma > 0)}, {"peak_read_gbps", jnum(lim.read, lim.read > 0)},
        {"fma_avx512_1t", jnum(peak.fma_avx512_1t, with_peak)}, {"fma_avx512_nt", jnum(peak.fma_avx512_nt, with_peak)},
        {"fma_avx2_1t", jnum(peak.fma_avx2_1t, with_peak)}, {"fma_avx2_nt", jnum(peak.fma_avx2_nt, with_peak)},
        {"read_1t_gbps", jnum(peak.read_1t, with_peak)}, {"read_nt_gbps", jnum(peak.read_nt, with_peak)}};
    auto outside_f = [&](const Phase& p) {
      return jobj({{"ms", jnum(outside(p) * 1e3)},
                   {"share_pct", jnum(p.wall_s > 0 ? 100 * outside(p) / p.wall_s : 0)}});
    };
    const Fields prefill_f = {
        {"tokens_per_s", jstats(pre_tps)}, {"ms", jstats(stats(prefill_ms))},
        {"profiled_tokens_per_s", jnum(prof_pre_tps)}, {"profiling_overhead_pct", jnum(pre_overhead)},
        {"profiled_steps", std::to_string(pre.steps)}, {"profiled_wall_ms", jnum(pre.wall_s * 1e3)},
        {"gemm", jobj({{"flops", jnum(gemm_flops)}, {"ms", jnum(gemm_s * 1e3)}, {"gflops", jnum(gemm_gflops)},
                       {"pct_peak", jnum(lim.fma > 0 ? 100 * gemm_gflops / lim.fma : 0, lim.fma > 0)}})},
        {"outside_ops", outside_f(pre)}, {"ops", phase_json(pre, by_layer, false, lim)}};
    const Fields decode_f = {
        {"tokens_per_s", jstats(dec_tps)}, {"ms_per_token", jstats(stats(decode_ms))},
        {"profiled_tokens_per_s", jnum(prof_dec_tps)}, {"profiling_overhead_pct", jnum(dec_overhead)},
        {"profiled_steps", std::to_string(dec.steps)}, {"profiled_wall_ms", jnum(dec.wall_s * 1e3)},
        {"bytes_per_token", jnum(bytes_per_token)}, {"gbps", jnum(dec_gbps)},
        {"pct_bw", jnum(pct_bw.median, !pct_bw_runs.empty())},
        {"pct_bw_min", jnum(pct_bw.min, !pct_bw_runs.empty())},
        {"pct_bw_max", jnum(pct_bw.max, !pct_bw_runs.empty())},
        {"read_gbps_per_repeat", jstats(read_bw)},
        {"outside_ops", outside_f(dec)}, {"ops", phase_json(dec, by_layer, true, lim)}};
    const std::string batch_v =
        B > 1 ? jobj({{"sessions", std::to_string(B)}, {"steps", std::to_string(G)},
                      {"batched_tokens_per_s", jstats(bat)}, {"sequential_tokens_per_s", jstats(seq)},
                      {"ratio", jnum(ratio)}})
              : "null";
    std::printf("%s\n", jobj({{"tool", jstr("headwise bench")}, {"model", jobj(model_f)}, {"run", jobj(run_f)},
                              {"machine", jobj(machine_f)}, {"prefill", jobj(prefill_f)},
                              {"decode", jobj(decode_f)}, {"batch", batch_v},
                              {"cpu_over_wall", jnum(cpu_over_wall)},
                              {"peak_rss_bytes", std::to_string(int64_t(rss))},
                              {"trace_file", !trace_path.empty() ? jstr(trace_path) : "null"}})
                            .c_str());
    return 0;
  }

  constexpr double MiB = 1 << 20;
  std::printf("model     %s: %d layers, d_model %d, %d heads (%d kv), head_dim %d, vocab %d, context %d\n",
              info.source.c_str(), info.n_layers, info.d_model, info.n_heads, info.n_kv_heads, info.head_dim,
              info.vocab_size, info.max_seq_len);
  std::printf("          weights %.1f MiB, KV cache (%s) %.1f KiB per token; loaded in %.2f s\n",
              info.weight_bytes / MiB, kv_type_name(kv_type), s0->kv_bytes_per_token() / 1024.0, load_s);
  std::printf("run       prompt %lld random token ids (seed %lld) in one pass, then %lld tokens decoded one at a\n"
              "          time (argmax fed back); kernels %s, %lld threads; %lld repeats after %lld warmup\n",
              P, seed, G, isa.c_str(), threads, repeat, warmup);
  std::printf("prefill   %.1f tokens/s median (min %.1f, max %.1f) = %.2f ms per prompt\n", pre_tps.median,
              pre_tps.min, pre_tps.max, P / pre_tps.median * 1e3);
  std::printf("decode    %.2f tokens/s median (min %.2f, max %.2f) = %.3f ms per token\n", dec_tps.median,
              dec_tps.min, dec_tps.max, 1e3 / dec_tps.median);
  if (lim.fma > 0)
    std::printf("          prefill GEMMs %.1f GFLOP/s = %.1f%% of %.0f GFLOP/s (%s FMA peak, %lld threads)\n",
                gemm_gflops, 100 * gemm_gflops / lim.fma, lim.fma, isa == "scalar" ? "avx2" : isa.c_str(), threads);
  if (!pct_bw_runs.empty())
    std::printf("          decode reads %.1f MiB per token (weights + KV) = %.1f GB/s = %.1f%% of the read\n"
                "          bandwidth measured after each repeat (median; %.1f-%.1f%%; bandwidth %.1f-%.1f GB/s)\n",
                bytes_per_token / MiB, dec_gbps, pct_bw.median, pct_bw.min, pct_bw.max, read_bw.min,
                read_bw.max);
  if (B > 1)
    std::printf("batch     %lld sessions × %lld steps: decode_batch %.2f tokens/s (min %.2f, max %.2f), one at a time\n"
                "          %.2f tokens/s (min %.2f, max %.2f): batched/sequential %.2f×\n",
                B, G, bat.median, bat.min, bat.max, seq.median, seq.min, seq.max, ratio);
  std::printf("profiled  prefill %.1f tokens/s, decode %.2f tokens/s: profiling overhead %.1f%% prefill, %.1f%% decode\n",
              prof_pre_tps, prof_dec_tps, pre_overhead, dec_overhead);
  // With the machine to itself this is close to the thread count; clearly less means
  // other processes had the cores for part of the time.
  std::printf("cpu/wall  %.2f with %lld threads on %d cores\n", cpu_over_wall, threads, omp_get_num_procs());
  std::printf("memory    peak RSS %.1f MiB (weights %.1f MiB, KV cache %.1f MiB per session)\n", rss / MiB,
              info.weight_bytes / MiB, double(s0->kv_cache_bytes()) / MiB);
  if (with_peak) std::printf("machine   %s\n", peak.summary().c_str());
  print_phase("prefill", pre, int(P), prof_repeats, by_layer, false, lim);
  print_phase("decode", dec, 1, prof_repeats, by_layer, true, lim);
  if (trace_file) std::printf("\ntrace     %zu op calls written to %s\n", events.size(), trace_path.c_str());
  return 0;
}

}  // namespace headwise::tools
