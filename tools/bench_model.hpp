// `headwise bench MODEL` in named steps (tools/cmd_bench_model.cpp runs them in order):
//   options   parse_options()          tools/cmd_bench_model.cpp
//   loading   load_and_open()          tools/cmd_bench_model.cpp
//   measuring measure(), derive()      tools/bench_model_measure.cpp
//   reports   write_trace(), print_json(), print_text()   tools/bench_model_report.cpp
// A new option is a field of BenchOptions, its line in usage() and its parse in
// parse_options(); what it changes reads the field.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/probe/peak.hpp"
#include "headwise/model.hpp"
#include "tools/bench_model_parts.hpp"

namespace headwise::tools::bench_model {

struct BenchOptions {
  long long seed = 1;       // --seed: weights of --synthetic and the prompt's ids
  long long P = 128;        // --prompt-len
  long long G = 32;         // --gen-len
  long long B = 1;          // --batch
  long long threads = 0;    // --threads (default: omp_get_max_threads())
  long long warmup = 1;     // --warmup
  long long repeat = 3;     // --repeat (= profiled repeats)
  KvType kv_type = KvType::f32;
  bool synthetic = false;   // --synthetic NAME (synth) instead of MODEL (model_path)
  std::string synth, model_path, tokenizer;
  std::string weights;      // --weights TYPE (--synthetic only), or empty
  bool json = false, by_layer = false, progress = false;
  bool with_peak = true;    // not --no-peak
  std::string trace_path;   // --trace FILE, or empty
};

// Everything one run measured, in the order it was measured.
struct Measured {
  ModelInfo info;
  std::string weight_types;  // the matrices' types: --weights' result, or a file's as stored
  std::string stored_mix;    // a file's matrices as a --weights mix (stored_weights_mix), or ""
  double load_s = 0;
  size_t kv_bytes_per_token = 0, kv_cache_bytes = 0;
  // per timed repeat
  std::vector<double> prefill_tps, decode_tps, prefill_ms, decode_ms, read_gbs;
  double timed_cpu = 0, timed_wall = 0;
  Phase pre, dec;                   // the profiled repeats
  std::vector<std::string> events;  // trace events (with --trace)
  std::vector<double> batched_tps, sequential_tps;  // --batch > 1
  double rss = 0;                   // the model's peak RSS (without the probe)
  MachinePeak peak;                 // measured unless --no-peak
  std::string isa;
  Limits lim;
};

// The figures the reports print, derived from Measured.
struct Figures {
  Stats pre_tps, dec_tps, read_bw, pct_bw, bat, seq;
  bool has_pct_bw = false;
  double prof_pre_tps = 0, prof_dec_tps = 0, pre_overhead = 0, dec_overhead = 0;
  double gemm_flops = 0, gemm_s = 0, gemm_gflops = 0;
  double type_peak = 0;        // --weights: the dot-product peak of its arithmetic
  std::string type_peak_what;  //   and its name
  double bytes_per_token = 0, dec_gbps = 0, ratio = 0, cpu_over_wall = 0;
};

// The model and the sessions the measurement runs on.
struct Bench {
  std::shared_ptr<const Model> model;
  std::vector<std::unique_ptr<Session>> sessions;  // one per batch member
  std::unique_ptr<Session> prof_session;           // profile on
};

// Runs the warmups, the timed and profiled repeats, the batch comparison and the peak
// probe; releases the sessions on the way (before the probe).
Status measure(const BenchOptions& o, bool want_trace, Bench* bench, Progress* progress,
               Measured* m);
// Medians, ratios and shares; sets m->lim.read to the median measured bandwidth.
Figures derive(const BenchOptions& o, Measured* m);

// Chrome trace-event JSON of m.events into f; false when it cannot be written.
bool write_trace(std::FILE* f, const Measured& m);
void print_json(const BenchOptions& o, const Measured& m, const Figures& f);
void print_text(const BenchOptions& o, const Measured& m, const Figures& f);

}  // namespace headwise::tools::bench_model
