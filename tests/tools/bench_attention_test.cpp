// `headwise bench attention`, run as a program: the memory promise of the fused kernel
// (a T=16384 causal prefill stays within Q/K/V/O plus 64 MiB of peak RSS, i.e. it never
// materialises the T×T scores), the JSON contract the compare script relies on, and the
// exit codes of bad usage. Nothing here depends on timing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/run_cli.hpp"

#include "kernels/attention/attention.hpp"
#include "kernels/dispatch.hpp"

namespace headwise::test {
namespace {


using Result = CliResult;

// `env headwise bench attention args`
Result bench(const std::string& args, const std::string& env = "") {
  return run_headwise("bench attention " + args, env);
}

nlohmann::json parse_one_object(const Result& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << "not one JSON object: " << r.out;
  return j;
}

TEST(BenchAttention, LongCausalPrefillPeakRssStaysWithinTensorsPlus64MiB) {
  // Q, K, V, O: 4 × 16384 × 8 × 128 × 4 bytes = 256 MiB. A kernel that held the
  // 16384² scores of even one head (1 GiB) would be far over the bound.
  const Result r = bench(
      "--seq 16384 --heads 8 --head-dim 128 --repeat 1 --warmup 0 --threads 2 --no-peak --json");
  const nlohmann::json j = parse_one_object(r);
  ASSERT_TRUE(j.contains("peak_rss_bytes") && j.contains("qkvo_bytes")) << r.out;
  const double qkvo = j["qkvo_bytes"].get<double>();
  const double rss = j["peak_rss_bytes"].get<double>();
  EXPECT_EQ(qkvo, 4.0 * 16384 * 8 * 128 * 4);
  EXPECT_LT(rss, qkvo + 64.0 * 1024 * 1024)
      << "peak RSS " << rss / (1 << 20) << " MiB, Q/K/V/O " << qkvo / (1 << 20) << " MiB";
}

TEST(BenchAttention, JsonPrefillHasEveryKey) {
  const Result r = bench("--batch 2 --seq 96 --heads 4 --kv-heads 2 --head-dim 32 --repeat 3 "
                         "--warmup 1 --threads 1 --no-peak --json");
  const nlohmann::json j = parse_one_object(r);
  for (const char* key : {"median_ms", "min_ms", "max_ms", "gflops", "isa", "kernel", "threads", "batch",
                          "seq", "kv_len", "heads", "kv_heads", "head_dim", "causal", "decode",
                          "peak_gflops", "pct_peak", "cpu_over_wall", "peak_rss_bytes",
                          "qkvo_bytes"})
    EXPECT_TRUE(j.contains(key)) << "missing " << key << " in " << r.out;
  EXPECT_EQ(j.value("seq", 0), 96);
  EXPECT_EQ(j.value("kv_heads", 0), 2);
  EXPECT_EQ(j.value("causal", false), true);
  EXPECT_EQ(j.value("decode", true), false);
  EXPECT_EQ(j.value("isa", ""), kernels::isa_name(kernels::detected_isa()));
  // the line the API runs (an fp32 cache: never an amx one)
  const std::string line = j.value("kernel", "");
  EXPECT_EQ(line.find("attn_fwd_f32_"), 0u) << line;
  EXPECT_EQ(line.find("__amx"), std::string::npos) << line;
  EXPECT_TRUE(j["pct_peak"].is_null()) << "--no-peak measures no peak";
  // (B, T, H, D) Q and O plus (B, T, Hkv, D) K and V, in bytes.
  EXPECT_EQ(j.value("qkvo_bytes", 0.0), (2.0 * 2 * 96 * 4 * 32 + 2.0 * 2 * 96 * 2 * 32) * 4);
  EXPECT_LE(j.value("min_ms", 1.0), j.value("median_ms", 0.0));
  EXPECT_LE(j.value("median_ms", 1.0), j.value("max_ms", 0.0));
}

TEST(BenchAttention, JsonDecodeWithPeakHasBandwidthKeys) {
  const Result r = bench("--decode 512 --heads 4 --head-dim 64 --repeat 2 --warmup 0 "
                         "--threads 1 --isa scalar --json");
  const nlohmann::json j = parse_one_object(r);
  for (const char* key : {"kv_len", "decode", "gbps", "peak_read_gbps", "pct_bw",
                          "peak_gflops", "pct_peak"})
    EXPECT_TRUE(j.contains(key)) << "missing " << key << " in " << r.out;
  EXPECT_EQ(j.value("decode", false), true);
  EXPECT_EQ(j.value("kv_len", 0), 512);
  EXPECT_EQ(j.value("isa", ""), "scalar");
  EXPECT_EQ(j.value("kernel", ""), "attn_fwd_f32_q4k64__scalar");
  // The peak is measured (a number) unless the CPU lacks AVX2 (then null, never 0).
  EXPECT_TRUE(j["peak_gflops"].is_number() || j["peak_gflops"].is_null());
  if (j["peak_gflops"].is_number()) {
    EXPECT_GT(j["peak_gflops"].get<double>(), 0.0);
  }
}

class BenchAttentionBadUsage : public ::testing::TestWithParam<const char*> {};

TEST_P(BenchAttentionBadUsage, ExitsTwoWithAMessage) {
  const Result r = bench(std::string(GetParam()) + " --repeat 1 --warmup 0 --no-peak");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << "results go to stdout, errors to stderr: " << r.out;
  EXPECT_NE(r.err.find("headwise bench attention:"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Cases, BenchAttentionBadUsage,
                         ::testing::Values("--heads 6 --kv-heads 4", "--head-dim 300",
                                           "--head-dim 0", "--isa bogus", "--batch 0",
                                           "--seq -5", "--seq ten", "--threads 0",
                                           "--decode 0", "--frobnicate", "stray",
                                           "--copies 0", "--copies 4097", "--copies x",
                                           "--kv-type f16 --kv-layout bogus", "--kv-layout tiled",
                                           "--kv-type f32 --kv-layout tiled",
                                           "--decode 64 --kv-type f16 --ahead l3", "--decode 64 --kv-type f16 --ahead",
                                           "--seq 64 --kv-type f16 --ahead l2", "--seq 64 --ahead l1"));

TEST(BenchAttention, CopiesBeyondTheMemoryBoundAreUsageErrorsBeforeAllocating) {
  // 1000 copies of a 100000-key, 64 × 128 f32 cache would be ~6 TiB: refused by
  // arithmetic, before anything is allocated.
  const Result r = bench("--decode 100000 --heads 64 --head-dim 128 --copies 1000 --no-peak");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--copies 1000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GiB"), std::string::npos) << r.err;
}

TEST(BenchAttention, CopiesAreCalledInTurnAndReported) {
  // Three copies of the K/V, every call on the next: the JSON names the count and the
  // text the copies' bytes; the calls succeed on each (a bad copy would fail or crash).
  for (const char* kv : {"f32", "f16"}) {
    const Result r = bench(std::string("--decode 300 --heads 4 --kv-heads 2 --head-dim 64 --repeat 4 --warmup 1 "
                                       "--threads 2 --no-peak --json --copies 3 --kv-type ") + kv);
    const nlohmann::json j = parse_one_object(r);
    EXPECT_EQ(j.value("copies", 0), 3) << r.out;
    EXPECT_EQ(j.value("kv_len", 0), 300);
  }
  // The copies exist: 4 copies of a 32 MiB K/V (4096 keys, 8 × 128, f32) hold 3 × 32 MiB
  // more than one (peak RSS, within 10% of it for the allocator and the process).
  double rss[2];
  for (int i = 0; i < 2; ++i) {
    const Result m = bench(std::string("--decode 4096 --heads 8 --head-dim 128 --repeat 4 --warmup 0 --threads 1 "
                                       "--no-peak --json --copies ") + (i ? "4" : "1"));
    rss[i] = parse_one_object(m).value("peak_rss_bytes", 0.0);
  }
  const double kv = 2.0 * 4096 * 8 * 128 * 4;
  EXPECT_GT(rss[1] - rss[0], 0.9 * 3 * kv) << "RSS " << rss[0] / (1 << 20) << " -> " << rss[1] / (1 << 20) << " MiB";
  const Result t = bench("--decode 300 --heads 4 --head-dim 64 --repeat 2 --warmup 0 --no-peak --copies 3");
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("3 K/V copies in turn"), std::string::npos) << t.out;
}

TEST(BenchAttention, KvLayoutDefaultsToTheSessionsAndIsHonoured) {
  // A 16-bit K/V is timed in a session's tiles unless --kv-layout plain says otherwise;
  // an f32 one is position-major. Both layouts run (with copies: every copy is re-based
  // into its own tiled buffer) and say which they timed, in JSON and in text.
  struct Case {
    const char* args;
    const char* layout;
  };
  for (const Case c : {Case{"--kv-type f16", "tiled"}, Case{"--kv-type bf16", "tiled"},
                       Case{"--kv-type f32", "plain"}, Case{"--kv-type f16 --kv-layout plain", "plain"},
                       Case{"--kv-type bf16 --kv-layout tiled", "tiled"}}) {
    const Result r = bench(std::string("--decode 37 --batch 2 --heads 4 --kv-heads 2 --head-dim 64 --repeat 3 "
                                       "--warmup 1 --threads 2 --no-peak --json --copies 3 ") + c.args);
    const nlohmann::json j = parse_one_object(r);
    EXPECT_EQ(j.value("kv_layout", ""), c.layout) << c.args << "\n" << r.out << r.err;
  }
  const Result t = bench("--seq 40 --heads 4 --head-dim 32 --repeat 2 --warmup 0 --no-peak --kv-type f16");
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("in a session's tiles of 16 positions"), std::string::npos) << t.out;
  const Result p = bench("--seq 40 --heads 4 --head-dim 32 --repeat 2 --warmup 0 --no-peak --kv-type f16 "
                         "--kv-layout plain");
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("position-major"), std::string::npos) << p.out;
}

TEST(BenchAttention, SixteenBitPrefillNamesTheAmxLineWhereUsable) {
  // A 16-bit cache's prefill runs on the amx line where AMX is usable (this process asks
  // as the CLI does), never with HEADWISE_AMX=0; the text names the line as the JSON does.
  for (const char* kv : {"f16", "bf16"}) {
    const std::string args = std::string("--seq 70 --heads 2 --head-dim 48 --repeat 1 --warmup 0 --no-peak --kv-type ") + kv;
    const std::string prefix = std::string("attn_fwd_") + kv + "_";
    const std::string on = parse_one_object(bench(args + " --json")).value("kernel", "");
    EXPECT_EQ(on.find(prefix), 0u) << on;
    EXPECT_EQ(on.find("__amx") != std::string::npos, kernels::amx_usable()) << on;
    const std::string off = parse_one_object(bench(args + " --json", "HEADWISE_AMX=0")).value("kernel", "");
    EXPECT_EQ(off.find(prefix), 0u) << off;
    EXPECT_EQ(off.find("__amx"), std::string::npos) << off;
    const Result text = bench(args, "HEADWISE_AMX=0");
    EXPECT_NE(text.out.find("(" + off + ")"), std::string::npos) << text.out;
  }
  const Result bad = bench("--seq 40 --heads 2 --head-dim 32 --repeat 1 --no-peak", "HEADWISE_AMX=2");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("HEADWISE_AMX='2' is not 0 or 1"), std::string::npos) << bad.err;
}

TEST(BenchAttention, IsaTheCpuLacksIsUsageError) {
  if (kernels::may_use(kernels::Isa::avx512)) GTEST_SKIP() << "this CPU has every ISA";
  const Result r = bench("--isa avx512 --seq 64 --no-peak");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("avx512"), std::string::npos) << r.err;
}

TEST(BenchAttention, ErrorFromTheLibraryExitsOne) {
  // The API reports an unusable HEADWISE_ISA when called: a runtime error, not usage.
  const Result r = bench("--seq 64 --repeat 1 --warmup 0 --no-peak", "HEADWISE_ISA=bogus");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("HEADWISE_ISA"), std::string::npos) << r.err;
}

TEST(BenchAttention, AheadIsHonouredAndReportedForADecodeOnly) {
  // --ahead picks where the decode kernel asks for the keys ahead; JSON and text say
  // which ran (the CPU's own choice without the option), for every cache type and
  // layout, and a prefill, which asks for none ahead, reports none.
  const std::string base = "--decode 100 --heads 4 --kv-heads 2 --head-dim 64 --repeat 2 --warmup 0 --no-peak ";
  const std::string cpu = kernels::attn_ahead_name(kernels::cpu_attn_ahead());
  for (const char* kv : {"--kv-type f16", "--kv-type bf16", "--kv-type f32", "--kv-type f16 --kv-layout plain"}) {
    for (const std::string a : {"l1", "l2"}) {
      const nlohmann::json j = parse_one_object(bench(base + "--json " + kv + " --ahead " + a));
      EXPECT_EQ(j.value("ahead", ""), a) << kv;
    }
    EXPECT_EQ(parse_one_object(bench(base + "--json " + kv)).value("ahead", ""), cpu) << kv;
  }
  const Result t = bench(base + "--kv-type f16 --ahead l2");
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("keys ahead asked for into L2"), std::string::npos) << t.out;
  const nlohmann::json pre = parse_one_object(bench("--seq 40 --heads 4 --head-dim 32 --repeat 1 --warmup 0 --no-peak "
                                                    "--json --kv-type f16"));
  EXPECT_TRUE(pre.contains("ahead") && pre["ahead"].is_null()) << pre.dump();
}

TEST(BenchAttention, HelpListsEveryOptionWithItsDefault) {
  const Result r = bench("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* opt : {"--batch", "--seq", "--heads", "--kv-heads", "--head-dim",
                          "--no-causal", "--decode", "--threads", "--repeat", "--warmup",
                          "--isa", "--json", "--no-peak", "--copies", "--kv-type", "--kv-layout", "--ahead"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  EXPECT_NE(r.out.find("default 2048"), std::string::npos);
  EXPECT_NE(r.out.find("default 10"), std::string::npos);
}

}  // namespace
}  // namespace headwise::test
