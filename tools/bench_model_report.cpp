// The reports of `headwise bench MODEL` (tools/bench_model.hpp): the Chrome trace file,
// the JSON document (the contract bench/compare_models_torch.py reads) and the text.
#include <omp.h>

#include <string>

#include "tools/bench_model.hpp"
#include "tools/json_write.hpp"

namespace headwise::tools::bench_model {
namespace {

double outside(const Phase& p) { return p.wall_s - op_seconds(p); }

std::string outside_json(const Phase& p) {
  return jobj({{"ms", jnum(outside(p) * 1e3)}, {"share_pct", jnum(p.wall_s > 0 ? 100 * outside(p) / p.wall_s : 0)}});
}

std::string model_json(const BenchOptions& o, const Measured& m) {
  const ModelInfo& info = m.info;
  return jobj({{"name", jstr(info.name)}, {"source", jstr(info.source)}, {"synthetic", o.synthetic ? "true" : "false"},
               {"weights", jstr(!o.weights.empty() ? o.weights : "as stored")},
               {"weight_types", jstr(m.weight_types)},
               {"vocab_size", std::to_string(info.vocab_size)}, {"d_model", std::to_string(info.d_model)},
               {"n_layers", std::to_string(info.n_layers)}, {"n_heads", std::to_string(info.n_heads)},
               {"n_kv_heads", std::to_string(info.n_kv_heads)}, {"head_dim", std::to_string(info.head_dim)},
               {"max_seq_len", std::to_string(info.max_seq_len)}, {"weight_bytes", std::to_string(info.weight_bytes)},
               {"kv_bytes_per_token", std::to_string(m.kv_bytes_per_token)},
               {"kv_type", jstr(kv_type_name(o.kv_type))}, {"load_s", jnum(m.load_s)}});
}

std::string run_json(const BenchOptions& o, const Measured& m) {
  return jobj({{"prompt_len", std::to_string(o.P)}, {"gen_len", std::to_string(o.G)}, {"batch", std::to_string(o.B)},
               {"threads", std::to_string(o.threads)}, {"cores", std::to_string(omp_get_num_procs())},
               {"warmup", std::to_string(o.warmup)}, {"repeat", std::to_string(o.repeat)},
               {"profiled_repeats", std::to_string(o.repeat)}, {"seed", std::to_string(o.seed)},
               {"isa", jstr(m.isa)}, {"prompt", jstr("random token ids")}, {"decode_feed", jstr("argmax")}});
}

std::string machine_json(const BenchOptions& o, const Measured& m) {
  const MachinePeak& p = m.peak;
  const bool w = o.with_peak;
  return jobj({{"measured", w ? "true" : "false"}, {"threads", std::to_string(o.threads)},
               {"peak_gflops", jnum(m.lim.fma, m.lim.fma > 0)}, {"peak_read_gbps", jnum(m.lim.read, m.lim.read > 0)},
               {"fma_avx512_1t", jnum(p.fma_avx512_1t, w)}, {"fma_avx512_nt", jnum(p.fma_avx512_nt, w)},
               {"fma_avx2_1t", jnum(p.fma_avx2_1t, w)}, {"fma_avx2_nt", jnum(p.fma_avx2_nt, w)},
               {"read_1t_gbps", jnum(p.read_1t, w)}, {"read_nt_gbps", jnum(p.read_nt, w)},
               {"dot_bf16_nt_gflops", jnum(p.dot_bf16_nt, w)}, {"dot_int8_nt_gops", jnum(p.dot_int8_nt, w)},
               {"dot_int8_avx2_nt_gops", jnum(p.dot_int8_avx2_nt, w)},
               {"tile_bf16_nt_gflops", jnum(p.tile_bf16_nt, w && p.tile_bf16_nt > 0)}});  // AMX only
}

std::string prefill_json(const BenchOptions& o, const Measured& m, const Figures& f) {
  const Limits& lim = m.lim;
  return jobj(
      {{"tokens_per_s", jstats(f.pre_tps)}, {"ms", jstats(stats(m.prefill_ms))},
       {"profiled_tokens_per_s", jnum(f.prof_pre_tps)}, {"profiling_overhead_pct", jnum(f.pre_overhead)},
       {"profiled_steps", std::to_string(m.pre.steps)}, {"profiled_wall_ms", jnum(m.pre.wall_s * 1e3)},
       {"gemm", jobj({{"flops", jnum(f.gemm_flops)}, {"ms", jnum(f.gemm_s * 1e3)}, {"gflops", jnum(f.gemm_gflops)},
                      {"pct_peak", jnum(lim.fma > 0 ? 100 * f.gemm_gflops / lim.fma : 0, lim.fma > 0)}})},
       {"gemm_type_peak", jnum(f.type_peak, f.type_peak > 0)},
       {"gemm_pct_type_peak", jnum(f.type_peak > 0 ? 100 * f.gemm_gflops / f.type_peak : 0, f.type_peak > 0)},
       {"outside_ops", outside_json(m.pre)}, {"ops", phase_json(m.pre, o.by_layer, false, lim)}});
}

std::string decode_json(const BenchOptions& o, const Measured& m, const Figures& f) {
  return jobj({{"tokens_per_s", jstats(f.dec_tps)}, {"ms_per_token", jstats(stats(m.decode_ms))},
               {"profiled_tokens_per_s", jnum(f.prof_dec_tps)}, {"profiling_overhead_pct", jnum(f.dec_overhead)},
               {"profiled_steps", std::to_string(m.dec.steps)}, {"profiled_wall_ms", jnum(m.dec.wall_s * 1e3)},
               {"bytes_per_token", jnum(f.bytes_per_token)}, {"gbps", jnum(f.dec_gbps)},
               {"pct_bw", jnum(f.pct_bw.median, f.has_pct_bw)},
               {"pct_bw_min", jnum(f.pct_bw.min, f.has_pct_bw)},
               {"pct_bw_max", jnum(f.pct_bw.max, f.has_pct_bw)},
               {"read_gbps_per_repeat", jstats(f.read_bw)},
               {"outside_ops", outside_json(m.dec)}, {"ops", phase_json(m.dec, o.by_layer, true, m.lim)}});
}

std::string batch_json(const BenchOptions& o, const Figures& f) {
  if (o.B <= 1) return "null";
  return jobj({{"sessions", std::to_string(o.B)}, {"steps", std::to_string(o.G)},
               {"batched_tokens_per_s", jstats(f.bat)}, {"sequential_tokens_per_s", jstats(f.seq)},
               {"ratio", jnum(f.ratio)}});
}

}  // namespace

bool write_trace(std::FILE* file, const Measured& m) {
  std::string doc = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  doc += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": " +
         jstr("headwise bench " + m.info.name) + "}},\n";
  for (size_t i = 0; i < m.events.size(); ++i) doc += m.events[i] + (i + 1 < m.events.size() ? ",\n" : "\n");
  doc += "]}\n";
  return std::fwrite(doc.data(), 1, doc.size(), file) == doc.size();
}

void print_json(const BenchOptions& o, const Measured& m, const Figures& f) {
  std::printf("%s\n", jobj({{"tool", jstr("headwise bench")}, {"model", model_json(o, m)}, {"run", run_json(o, m)},
                            {"machine", machine_json(o, m)}, {"prefill", prefill_json(o, m, f)},
                            {"decode", decode_json(o, m, f)}, {"batch", batch_json(o, f)},
                            {"cpu_over_wall", jnum(f.cpu_over_wall)},
                            {"peak_rss_bytes", std::to_string(int64_t(m.rss))},
                            {"trace_file", !o.trace_path.empty() ? jstr(o.trace_path) : "null"}})
                          .c_str());
}

void print_text(const BenchOptions& o, const Measured& m, const Figures& f) {
  constexpr double MiB = 1 << 20;
  const ModelInfo& info = m.info;
  const char* isa = m.isa.c_str();
  std::printf("model     %s: %d layers, d_model %d, %d heads (%d kv), head_dim %d, vocab %d, context %d\n",
              info.source.c_str(), info.n_layers, info.d_model, info.n_heads, info.n_kv_heads, info.head_dim,
              info.vocab_size, info.max_seq_len);
  std::printf("          weights %.1f MiB, KV cache (%s) %.1f KiB per token; loaded in %.2f s\n",
              info.weight_bytes / MiB, kv_type_name(o.kv_type), m.kv_bytes_per_token / 1024.0, m.load_s);
  if (!m.weight_types.empty())
    std::printf("weights   %s%s: matrices %s\n", o.weights.empty() ? "as stored" : "--weights ", o.weights.c_str(),
                m.weight_types.c_str());
  std::printf("run       prompt %lld random token ids (seed %lld) in one pass, then %lld tokens decoded one at a\n"
              "          time (argmax fed back); kernels %s, %lld threads; %lld repeats after %lld warmup\n",
              o.P, o.seed, o.G, isa, o.threads, o.repeat, o.warmup);
  std::printf("prefill   %.1f tokens/s median (min %.1f, max %.1f) = %.2f ms per prompt\n", f.pre_tps.median,
              f.pre_tps.min, f.pre_tps.max, o.P / f.pre_tps.median * 1e3);
  std::printf("decode    %.2f tokens/s median (min %.2f, max %.2f) = %.3f ms per token\n", f.dec_tps.median,
              f.dec_tps.min, f.dec_tps.max, 1e3 / f.dec_tps.median);
  if (m.lim.fma > 0)
    std::printf("          prefill GEMMs %.1f GFLOP/s = %.1f%% of %.0f GFLOP/s (%s FMA peak, %lld threads)\n",
                f.gemm_gflops, 100 * f.gemm_gflops / m.lim.fma, m.lim.fma, m.isa == "scalar" ? "avx2" : isa,
                o.threads);
  if (f.type_peak > 0)
    std::printf("          = %.1f%% of %.0f G(FL)OP/s (%s peak: the arithmetic of %s%s)\n",
                100 * f.gemm_gflops / f.type_peak, f.type_peak, f.type_peak_what.c_str(),
                o.weights.empty() ? "the stored matrices" : "--weights ", o.weights.c_str());
  if (f.has_pct_bw)
    std::printf("          decode reads %.1f MiB per token (weights + KV) = %.1f GB/s = %.1f%% of the read\n"
                "          bandwidth measured after each repeat (median; %.1f-%.1f%%; bandwidth %.1f-%.1f GB/s)\n",
                f.bytes_per_token / MiB, f.dec_gbps, f.pct_bw.median, f.pct_bw.min, f.pct_bw.max, f.read_bw.min,
                f.read_bw.max);
  if (o.B > 1)
    std::printf("batch     %lld sessions × %lld steps: decode_batch %.2f tokens/s (min %.2f, max %.2f), one at a time\n"
                "          %.2f tokens/s (min %.2f, max %.2f): batched/sequential %.2f×\n",
                o.B, o.G, f.bat.median, f.bat.min, f.bat.max, f.seq.median, f.seq.min, f.seq.max, f.ratio);
  std::printf("profiled  prefill %.1f tokens/s, decode %.2f tokens/s: profiling overhead %.1f%% prefill, %.1f%% decode\n",
              f.prof_pre_tps, f.prof_dec_tps, f.pre_overhead, f.dec_overhead);
  // With the machine to itself this is close to the thread count; clearly less means
  // other processes had the cores for part of the time.
  std::printf("cpu/wall  %.2f with %lld threads on %d cores\n", f.cpu_over_wall, o.threads, omp_get_num_procs());
  std::printf("memory    peak RSS %.1f MiB (weights %.1f MiB, KV cache %.1f MiB per session)\n", m.rss / MiB,
              info.weight_bytes / MiB, double(m.kv_cache_bytes) / MiB);
  if (o.with_peak) std::printf("machine   %s\n", m.peak.summary().c_str());
  print_phase("prefill", m.pre, int(o.P), int(o.repeat), o.by_layer, false, m.lim);
  print_phase("decode", m.dec, 1, int(o.repeat), o.by_layer, true, m.lim);
  if (!o.trace_path.empty())
    std::printf("\ntrace     %zu op calls written to %s\n", m.events.size(), o.trace_path.c_str());
}

}  // namespace headwise::tools::bench_model
