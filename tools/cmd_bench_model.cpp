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
#include "tools/bench_weights.hpp"
#include "runtime/splitmix64.hpp"
#include "tools/args.hpp"
#include "tools/json_write.hpp"
#include "tools/bench_model_parts.hpp"
#include "tools/process_stats.hpp"

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
      "                    q4_k|q6_k|q4_k_m (types per tensor as `headwise convert`)\n"
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

// decode_batch over all `sessions` against the same sessions stepped one at a time,
// each repeat from freshly prefilled prompts (a different one per sequence, as a server
// would see): tokens/s of both, per timed repeat.
Status batch_vs_sequential(const std::vector<std::unique_ptr<Session>>& sessions, int P, int G, uint64_t seed,
                           int threads, int warmup, int repeat, Progress* progress,
                           std::vector<double>* batched_tps, std::vector<double>* sequential_tps) {
  const int B = int(sessions.size());
  std::vector<Session*> ptrs;
  for (const auto& s : sessions) ptrs.push_back(s.get());
  std::vector<int32_t> toks(B);
  const int V = ptrs[0]->model().info().vocab_size;
  auto prefill_all = [&]() -> Status {
    for (int b = 0; b < B; ++b) {
      ptrs[b]->reset();
      HW_RETURN_IF_ERROR(ptrs[b]->prefill(random_tokens(seed + 1000 + b, P, V)));
      toks[b] = argmax(ptrs[b]->logits(), V);
    }
    return Status::Ok();
  };
  for (int r = 0; r < warmup + repeat; ++r) {
    const bool timed = r >= warmup;
    progress->say(true, "batch %d: %s %d/%d", B, timed ? "repeat" : "warmup", timed ? r - warmup + 1 : r + 1,
                  timed ? repeat : warmup);
    HW_RETURN_IF_ERROR(prefill_all());
    double tb = 0;
    for (int g = 0; g < G; ++g) {
      progress->say(false, "[batch %d] batched decode %d/%d", B, g, G);
      const auto t0 = Clock::now();
      HW_RETURN_IF_ERROR(Session::decode_batch(ptrs.data(), toks.data(), B, threads));
      tb += seconds(t0, Clock::now());
      for (int b = 0; b < B; ++b) toks[b] = argmax(ptrs[b]->logits(), V);
    }
    HW_RETURN_IF_ERROR(prefill_all());
    double ts = 0;
    for (int g = 0; g < G; ++g) {
      progress->say(false, "[batch %d] sequential decode %d/%d", B, g, G);
      for (int b = 0; b < B; ++b) {
        const auto t0 = Clock::now();
        HW_RETURN_IF_ERROR(ptrs[b]->decode(toks[b]));
        ts += seconds(t0, Clock::now());
        toks[b] = argmax(ptrs[b]->logits(), V);
      }
    }
    if (timed) {
      batched_tps->push_back(double(B) * G / tb);
      sequential_tps->push_back(double(B) * G / ts);
    }
  }
  return Status::Ok();
}

}  // namespace

int cmd_bench_model(int argc, char** argv) {
  Args args;
  if (!args.parse(argc, argv, {"json", "no-peak", "by-layer", "progress", "help"},
                  {"synthetic", "seed", "tokenizer", "prompt-len", "gen-len", "batch", "threads",
                   "warmup", "repeat", "trace", "kv-type", "weights"}))
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
  if (const std::string e = bench_weights_error(args, synthetic); !e.empty()) return usage_error(e);
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
  std::string weight_types;  // --weights: what the matrices became
  {
    Status s;
    if (synthetic) {
      s = load_bench_synthetic(args, synth, uint64_t(seed), &model, &weight_types);
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
  // Read before the sessions are released (they go before the peak probe runs).
  const size_t kv_bytes_per_token = s0->kv_bytes_per_token(), kv_cache_bytes = s0->kv_cache_bytes();
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
    const Status st = batch_vs_sequential(sessions, int(P), int(G), uint64_t(seed), int(threads), int(warmup),
                                          int(repeat), &progress, &batched_tps, &sequential_tps);
    if (!st.ok()) return fail(st);
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
  std::string type_peak_what;  // --weights: the dot-product peak of its arithmetic
  const double type_peak = with_peak && args.has("weights")
                               ? bench_weights_peak(args.str("weights"), peak, int(threads), &type_peak_what) : 0;
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
    const JsonFields model_f = {
        {"name", jstr(info.name)}, {"source", jstr(info.source)}, {"synthetic", synthetic ? "true" : "false"},
        {"weights", jstr(args.has("weights") ? args.str("weights") : "as stored")},
        {"weight_types", jstr(weight_types)},
        {"vocab_size", std::to_string(info.vocab_size)}, {"d_model", std::to_string(info.d_model)},
        {"n_layers", std::to_string(info.n_layers)}, {"n_heads", std::to_string(info.n_heads)},
        {"n_kv_heads", std::to_string(info.n_kv_heads)}, {"head_dim", std::to_string(info.head_dim)},
        {"max_seq_len", std::to_string(info.max_seq_len)}, {"weight_bytes", std::to_string(info.weight_bytes)},
        {"kv_bytes_per_token", std::to_string(kv_bytes_per_token)},
        {"kv_type", jstr(kv_type_name(kv_type))}, {"load_s", jnum(load_s)}};
    const JsonFields run_f = {
        {"prompt_len", std::to_string(P)}, {"gen_len", std::to_string(G)}, {"batch", std::to_string(B)},
        {"threads", std::to_string(threads)}, {"cores", std::to_string(omp_get_num_procs())},
        {"warmup", std::to_string(warmup)}, {"repeat", std::to_string(repeat)},
        {"profiled_repeats", std::to_string(prof_repeats)}, {"seed", std::to_string(seed)},
        {"isa", jstr(isa)}, {"prompt", jstr("random token ids")}, {"decode_feed", jstr("argmax")}};
    const JsonFields machine_f = {
        {"measured", with_peak ? "true" : "false"}, {"threads", std::to_string(threads)},
        {"peak_gflops", jnum(lim.fma, lim.fma > 0)}, {"peak_read_gbps", jnum(lim.read, lim.read > 0)},
        {"fma_avx512_1t", jnum(peak.fma_avx512_1t, with_peak)}, {"fma_avx512_nt", jnum(peak.fma_avx512_nt, with_peak)},
        {"fma_avx2_1t", jnum(peak.fma_avx2_1t, with_peak)}, {"fma_avx2_nt", jnum(peak.fma_avx2_nt, with_peak)},
        {"read_1t_gbps", jnum(peak.read_1t, with_peak)}, {"read_nt_gbps", jnum(peak.read_nt, with_peak)},
        {"dot_bf16_nt_gflops", jnum(peak.dot_bf16_nt, with_peak)}, {"dot_int8_nt_gops", jnum(peak.dot_int8_nt, with_peak)}};
    auto outside_f = [&](const Phase& p) {
      return jobj({{"ms", jnum(outside(p) * 1e3)},
                   {"share_pct", jnum(p.wall_s > 0 ? 100 * outside(p) / p.wall_s : 0)}});
    };
    const JsonFields prefill_f = {
        {"tokens_per_s", jstats(pre_tps)}, {"ms", jstats(stats(prefill_ms))},
        {"profiled_tokens_per_s", jnum(prof_pre_tps)}, {"profiling_overhead_pct", jnum(pre_overhead)},
        {"profiled_steps", std::to_string(pre.steps)}, {"profiled_wall_ms", jnum(pre.wall_s * 1e3)},
        {"gemm", jobj({{"flops", jnum(gemm_flops)}, {"ms", jnum(gemm_s * 1e3)}, {"gflops", jnum(gemm_gflops)},
                       {"pct_peak", jnum(lim.fma > 0 ? 100 * gemm_gflops / lim.fma : 0, lim.fma > 0)}})},
        {"gemm_type_peak", jnum(type_peak, type_peak > 0)},
        {"gemm_pct_type_peak", jnum(type_peak > 0 ? 100 * gemm_gflops / type_peak : 0, type_peak > 0)},
        {"outside_ops", outside_f(pre)}, {"ops", phase_json(pre, by_layer, false, lim)}};
    const JsonFields decode_f = {
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
              info.weight_bytes / MiB, kv_type_name(kv_type), kv_bytes_per_token / 1024.0, load_s);
  if (!weight_types.empty()) std::printf("weights   --weights %s: matrices %s\n", args.str("weights").c_str(), weight_types.c_str());
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
  if (type_peak > 0)
    std::printf("          = %.1f%% of %.0f G(FL)OP/s (%s peak: the arithmetic of --weights %s)\n",
                100 * gemm_gflops / type_peak, type_peak, type_peak_what.c_str(), args.str("weights").c_str());
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
              info.weight_bytes / MiB, double(kv_cache_bytes) / MiB);
  if (with_peak) std::printf("machine   %s\n", peak.summary().c_str());
  print_phase("prefill", pre, int(P), prof_repeats, by_layer, false, lim);
  print_phase("decode", dec, 1, prof_repeats, by_layer, true, lim);
  if (trace_file) std::printf("\ntrace     %zu op calls written to %s\n", events.size(), trace_path.c_str());
  return 0;
}

}  // namespace headwise::tools
