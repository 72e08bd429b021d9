// peak_probe — prints this machine's measured limits: fp32 FMA GFLOP/s with AVX-512
// and AVX2 at 1 and N threads, and memory read bandwidth at 1 and N threads. These are
// the denominators of every "% of peak" the benchmarks report, so a result always
// reads against the machine it was taken on.
//
//   peak_probe [--threads N] [--seconds S] [--json]
#include <omp.h>

#include <cstdio>
#include <string>

#include "bench/probe/peak.hpp"
#include "tools/args.hpp"

namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: peak_probe [options]\n"
               "  --threads N   threads for the N-thread probes (default: all, %d here)\n"
               "  --seconds S   seconds per probe run (default 0.1; 12 probes in all)\n"
               "  --json        print one JSON object instead of text\n",
               omp_get_max_threads());
}

}  // namespace

int main(int argc, char** argv) {
  headwise::tools::Args args;
  if (!args.parse(argc - 1, argv + 1, {"json", "help"}, {"threads", "seconds"})) {
    std::fprintf(stderr, "peak_probe: %s\n", args.error().c_str());
    usage(stderr);
    return 2;
  }
  if (args.has("help")) {
    usage(stdout);
    return 0;
  }
  const long long threads = args.integer("threads", omp_get_max_threads());
  const double seconds = args.number("seconds", 0.1);
  std::string bad;
  if (!args.ok()) bad = args.error();
  else if (!args.positional().empty()) bad = "unexpected argument '" + args.positional()[0] + "'";
  else if (threads < 1 || threads > 4096) bad = "--threads must be in 1..4096";
  else if (!(seconds > 0.0 && seconds <= 10.0)) bad = "--seconds must be in (0, 10]";
  if (!bad.empty()) {
    std::fprintf(stderr, "peak_probe: %s\n", bad.c_str());
    return 2;
  }

  const headwise::MachinePeak m = headwise::measure_peak(int(threads), seconds);
  if (args.has("json")) {
    std::printf(
        "{\"threads\": %d, \"fma_avx512_1t_gflops\": %.2f, \"fma_avx512_nt_gflops\": %.2f, "
        "\"fma_avx2_1t_gflops\": %.2f, \"fma_avx2_nt_gflops\": %.2f, "
        "\"dot_bf16_1t_gflops\": %.2f, \"dot_bf16_nt_gflops\": %.2f, "
        "\"dot_int8_1t_gops\": %.2f, \"dot_int8_nt_gops\": %.2f, "
        "\"dot_int8_avx2_1t_gops\": %.2f, \"dot_int8_avx2_nt_gops\": %.2f, "
        "\"read_1t_gbps\": %.2f, \"read_nt_gbps\": %.2f}\n",
        m.threads, m.fma_avx512_1t, m.fma_avx512_nt, m.fma_avx2_1t, m.fma_avx2_nt, m.dot_bf16_1t,
        m.dot_bf16_nt, m.dot_int8_1t, m.dot_int8_nt, m.dot_int8_avx2_1t, m.dot_int8_avx2_nt, m.read_1t, m.read_nt);
    return 0;
  }
  // 0 means the CPU lacks the ISA: say so rather than print a zero rate.
  auto rate = [](double v) { return v > 0 ? std::to_string(int(v + 0.5)) : std::string("n/a"); };
  std::printf("threads            %8s %8d\n", "1", m.threads);
  std::printf("fp32 FMA avx512    %8s %8s  GFLOP/s\n", rate(m.fma_avx512_1t).c_str(),
              rate(m.fma_avx512_nt).c_str());
  std::printf("fp32 FMA avx2      %8s %8s  GFLOP/s\n", rate(m.fma_avx2_1t).c_str(),
              rate(m.fma_avx2_nt).c_str());
  std::printf("bf16 dot avx512    %8s %8s  GFLOP/s\n", rate(m.dot_bf16_1t).c_str(),
              rate(m.dot_bf16_nt).c_str());
  std::printf("int8 dot avx512    %8s %8s  GOP/s\n", rate(m.dot_int8_1t).c_str(),
              rate(m.dot_int8_nt).c_str());
  std::printf("int8 dot avx2      %8s %8s  GOP/s\n", rate(m.dot_int8_avx2_1t).c_str(),
              rate(m.dot_int8_avx2_nt).c_str());
  std::printf("read bandwidth     %8s %8s  GB/s\n", rate(m.read_1t).c_str(),
              rate(m.read_nt).c_str());
  return 0;
}
