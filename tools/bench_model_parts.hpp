// The building blocks of `headwise bench MODEL` (its steps: tools/bench_model.hpp):
// statistics, progress on stderr, one timed and one profiled run, and the per-op tables
// (text and JSON).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "headwise/model.hpp"
#include "runtime/splitmix64.hpp"
#include "tools/json_write.hpp"

namespace headwise::tools::bench_model {

constexpr const char* kName = "headwise bench";

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Stats {
  double min = 0, median = 0, max = 0;
};

inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return {};
  return {v.front(), n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.back()};
}

inline std::string jstats(const Stats& s) {
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

inline int32_t argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

// Seeded token ids in [0, vocab), splitmix64.
inline std::vector<int32_t> random_tokens(uint64_t seed, int n, int vocab) {
  std::vector<int32_t> t(n);
  uint64_t s = seed * kSplitmix64Gamma + 0x1234567ull;
  for (int i = 0; i < n; ++i) t[i] = int32_t(splitmix64_next(&s) % uint64_t(vocab));
  return t;
}

// --- the runs -------------------------------------------------------------------------

struct Phase {                  // prefill or decode over the profiled repeats
  std::vector<OpTiming> nodes;  // per plan node, summed
  double wall_s = 0;            // sum of the calls' wall time
  int steps = 0;                // calls of prefill() / decode()
};

inline void accumulate(const std::vector<OpTiming>& t, std::vector<OpTiming>* sum) {
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
inline void add_trace(const Session& s, size_t from, double start_us, const char* cat, int step,
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

inline std::vector<Row> table(const Phase& p, bool by_layer) {
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

inline double op_seconds(const Phase& p) {
  double s = 0;
  for (const OpTiming& t : p.nodes) s += t.seconds;
  return s;
}

inline std::string phase_json(const Phase& p, bool by_layer, bool decode, const Limits& lim) {
  std::vector<std::string> items;
  for (const Row& r : table(p, by_layer)) {
    const double gflops = r.seconds > 0 ? r.flops / r.seconds / 1e9 : 0;
    const double gbps = r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0;
    JsonFields f = {{"op", jstr(r.op)}};
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

inline void print_phase(const char* title, const Phase& p, int rows_per_step, int repeats, bool by_layer,
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
inline void gemm_work(const Phase& p, double* flops, double* secs) {
  *flops = *secs = 0;
  for (const OpTiming& t : p.nodes)
    if (t.op == "linear" || t.op == "logits") {
      *flops += t.flops;
      *secs += t.seconds;
    }
}

inline double bytes_of(const Phase& p) {
  double b = 0;
  for (const OpTiming& t : p.nodes) b += t.bytes;
  return b;
}


}  // namespace headwise::tools::bench_model
