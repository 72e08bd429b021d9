// The measuring steps of `headwise bench MODEL` (tools/bench_model.hpp): warmups, timed
// and profiled repeats, the batch comparison, the machine's limits, and the figures
// derived from them. Why it is measured this way: tools/cmd_bench_model.cpp.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "headwise/attention.hpp"
#include "tools/bench_model.hpp"
#include "tools/bench_weights.hpp"
#include "tools/process_stats.hpp"

namespace headwise::tools::bench_model {
namespace {

// Warms both sessions (first steps fault fresh activation pages in).
Status warm_up(const BenchOptions& o, const Runner& run, Bench* b) {
  char label[64];
  for (long long w = 0; w < std::max(1LL, o.warmup); ++w) {
    std::snprintf(label, sizeof label, "warmup %lld/%lld", w + 1, std::max(1LL, o.warmup));
    double a, d;
    HW_RETURN_IF_ERROR(run.timed(b->sessions[0].get(), label, &a, &d));
    Phase scratch_pre, scratch_dec;
    HW_RETURN_IF_ERROR(run.profiled(b->prof_session.get(), Clock::now(), &scratch_pre, &scratch_dec, nullptr));
  }
  return Status::Ok();
}

// The timed repeats. Each one runs unprofiled (the headline numbers) and then profiled
// (the per-op tables and the trace), so both see the machine in the same state: on a
// shared host memory bandwidth drifts by tens of percent over seconds, and "profiling
// overhead" must not read that drift as the cost of the per-op clocks. The read
// bandwidth is measured after every timed repeat for the same reason.
Status timed_repeats(const BenchOptions& o, const Runner& run, Bench* b, ReadProbe* read_probe,
                     bool want_trace, Progress* progress, Measured* m) {
  char label[64];
  const auto origin = Clock::now();
  for (long long r = 0; r < o.repeat; ++r) {
    std::snprintf(label, sizeof label, "repeat %lld/%lld", r + 1, o.repeat);
    progress->say(true, "%s", label);
    const double cpu0 = cpu_seconds();
    const auto wall0 = Clock::now();
    double a, d;
    HW_RETURN_IF_ERROR(run.timed(b->sessions[0].get(), label, &a, &d));
    m->timed_cpu += cpu_seconds() - cpu0;
    m->timed_wall += seconds(wall0, Clock::now());
    m->prefill_tps.push_back(o.P / a);
    m->decode_tps.push_back(o.G / d);
    m->prefill_ms.push_back(a * 1e3);
    m->decode_ms.push_back(d * 1e3 / o.G);
    if (read_probe) {
      progress->say(true, "read bandwidth after repeat %lld/%lld", r + 1, o.repeat);
      m->read_gbs.push_back(read_probe->gbs(4));
    }
    progress->say(true, "profiled repeat %lld/%lld", r + 1, o.repeat);
    HW_RETURN_IF_ERROR(
        run.profiled(b->prof_session.get(), origin, &m->pre, &m->dec, want_trace ? &m->events : nullptr));
  }
  return Status::Ok();
}

// decode_batch over all `sessions` against the same sessions stepped one at a time,
// each repeat from freshly prefilled prompts (a different one per sequence, as a server
// would see): tokens/s of both, per timed repeat.
Status batch_vs_sequential(const BenchOptions& o, const std::vector<std::unique_ptr<Session>>& sessions,
                           Progress* progress, Measured* m) {
  const int B = int(sessions.size()), P = int(o.P), G = int(o.G);
  std::vector<Session*> ptrs;
  for (const auto& s : sessions) ptrs.push_back(s.get());
  std::vector<int32_t> toks(B);
  const int V = ptrs[0]->model().info().vocab_size;
  auto prefill_all = [&]() -> Status {
    for (int b = 0; b < B; ++b) {
      ptrs[b]->reset();
      HW_RETURN_IF_ERROR(ptrs[b]->prefill(random_tokens(uint64_t(o.seed) + 1000 + b, P, V)));
      toks[b] = argmax(ptrs[b]->logits(), V);
    }
    return Status::Ok();
  };
  for (int r = 0; r < o.warmup + o.repeat; ++r) {
    const bool timed = r >= o.warmup;
    progress->say(true, "batch %d: %s %d/%d", B, timed ? "repeat" : "warmup", timed ? int(r - o.warmup + 1) : r + 1,
                  int(timed ? o.repeat : o.warmup));
    HW_RETURN_IF_ERROR(prefill_all());
    double tb = 0;
    for (int g = 0; g < G; ++g) {
      progress->say(false, "[batch %d] batched decode %d/%d", B, g, G);
      const auto t0 = Clock::now();
      HW_RETURN_IF_ERROR(Session::decode_batch(ptrs.data(), toks.data(), B, int(o.threads)));
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
      m->batched_tps.push_back(double(B) * G / tb);
      m->sequential_tps.push_back(double(B) * G / ts);
    }
  }
  return Status::Ok();
}

}  // namespace

Status measure(const BenchOptions& o, bool want_trace, Bench* b, Progress* progress, Measured* m) {
  const std::vector<int32_t> prompt = random_tokens(uint64_t(o.seed), int(o.P), m->info.vocab_size);
  const Runner run{prompt, int(o.G), progress};
  HW_RETURN_IF_ERROR(warm_up(o, run, b));
  // The probe's 256 MiB are not the model's: its memory high-water mark is taken before
  // they exist, and at the end without them.
  const double rss_before_probe = peak_rss_bytes();
  std::unique_ptr<ReadProbe> read_probe;
  if (o.with_peak) read_probe = std::make_unique<ReadProbe>(int(o.threads));
  HW_RETURN_IF_ERROR(timed_repeats(o, run, b, read_probe.get(), want_trace, progress, m));
  b->prof_session.reset();
  if (o.B > 1) HW_RETURN_IF_ERROR(batch_vs_sequential(o, b->sessions, progress, m));
  m->rss = std::max(rss_before_probe, current_rss_bytes() - (read_probe ? double(read_probe->bytes()) : 0.0));
  read_probe.reset();
  b->sessions.clear();

  if (o.with_peak) {
    progress->say(true, "measuring the machine peak");
    m->peak = measure_peak(int(o.threads));
  }
  progress->clear();
  m->isa = isa_name();
  if (o.with_peak) {
    m->lim.fma = m->peak.fma_gflops(m->isa, int(o.threads));
    m->lim.read = m->peak.read_gbs(int(o.threads));
  }
  return Status::Ok();
}

Figures derive(const BenchOptions& o, Measured* m) {
  Figures f;
  f.pre_tps = stats(m->prefill_tps);
  f.dec_tps = stats(m->decode_tps);
  f.prof_pre_tps = m->pre.wall_s > 0 ? double(o.P) * o.repeat / m->pre.wall_s : 0;
  f.prof_dec_tps = m->dec.wall_s > 0 ? double(m->dec.steps) / m->dec.wall_s : 0;
  // Time per unit of work profiled vs not: how much the per-op clocks cost.
  f.pre_overhead = f.prof_pre_tps > 0 ? 100.0 * (f.pre_tps.median / f.prof_pre_tps - 1) : 0;
  f.dec_overhead = f.prof_dec_tps > 0 ? 100.0 * (f.dec_tps.median / f.prof_dec_tps - 1) : 0;
  gemm_work(m->pre, &f.gemm_flops, &f.gemm_s);
  f.gemm_gflops = f.gemm_s > 0 ? f.gemm_flops / f.gemm_s / 1e9 : 0;
  // The peak of the arithmetic the prefill GEMMs run on: --weights' mix, or a file's
  // matrices as stored (a BF16 file's GEMMs against the FMA peak alone read ~145%).
  const std::string mix = !o.weights.empty() ? o.weights : m->stored_mix;
  if (o.with_peak && !mix.empty())
    f.type_peak = bench_weights_peak(mix, m->isa, m->peak, int(o.threads), int(o.P), &f.type_peak_what);
  // Bytes one decoded token reads (weights + KV cache), at the headline decode rate; its
  // share of the bandwidth is the median over repeats of each repeat's rate against the
  // bandwidth measured right after it.
  f.bytes_per_token = m->dec.steps > 0 ? bytes_of(m->dec) / m->dec.steps : 0;
  f.dec_gbps = f.bytes_per_token * f.dec_tps.median / 1e9;
  std::vector<double> pct_bw_runs;
  for (size_t r = 0; r < m->read_gbs.size() && r < m->decode_tps.size(); ++r)
    if (m->read_gbs[r] > 0)
      pct_bw_runs.push_back(100.0 * f.bytes_per_token * m->decode_tps[r] / 1e9 / m->read_gbs[r]);
  f.has_pct_bw = !pct_bw_runs.empty();
  f.read_bw = stats(m->read_gbs);
  f.pct_bw = stats(pct_bw_runs);
  if (!m->read_gbs.empty()) m->lim.read = f.read_bw.median;  // the per-op tables use the same figure
  f.bat = stats(m->batched_tps);
  f.seq = stats(m->sequential_tps);
  f.ratio = f.seq.median > 0 ? f.bat.median / f.seq.median : 0;
  f.cpu_over_wall = m->timed_wall > 0 ? m->timed_cpu / m->timed_wall : 0.0;
  return f;
}

}  // namespace headwise::tools::bench_model
