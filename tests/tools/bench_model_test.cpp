// `headwise bench MODEL|--synthetic NAME`, run as a program on the tiny synthetic model:
// the JSON contract compare_models_torch.py relies on and its internal consistency
// (per-op calls match the graph and the steps, shares add up to 100% with the
// outside-ops time, the Chrome trace has one slice per op call), the batch section,
// and the exit codes of bad usage and a missing model. Nothing here depends on timing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tools/run_cli.hpp"

namespace headwise::test {
namespace {

// Small enough to run in well under a second on one thread.
const std::string kTiny =
    "--synthetic tiny --prompt-len 16 --gen-len 4 --repeat 1 --warmup 0 --threads 1 --no-peak";

using Result = CliResult;

// `headwise bench args`
Result bench(const std::string& args) { return run_headwise("bench " + args); }

nlohmann::json parse_one_object(const Result& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << "not one JSON object: " << r.out;
  return j;
}

void expect_rate(const nlohmann::json& s, const std::string& what) {
  ASSERT_TRUE(s.is_object()) << what;
  const double lo = s["min"].get<double>(), mid = s["median"].get<double>(), hi = s["max"].get<double>();
  EXPECT_GT(lo, 0) << what;
  EXPECT_LE(lo, mid) << what;
  EXPECT_LE(mid, hi) << what;
}

// Checks one phase's per-op table; returns calls per op.
std::map<std::string, int> check_phase(const nlohmann::json& p, int layers, int steps,
                                       const std::string& name) {
  std::map<std::string, int> calls;
  EXPECT_EQ(p["profiled_steps"].get<int>(), steps) << name;
  const nlohmann::json& ops = p["ops"];
  EXPECT_TRUE(ops.is_array() && !ops.empty()) << name;
  double share = 0, ms = 0;
  for (const nlohmann::json& r : ops) {
    const std::string op = r["op"].get<std::string>();
    const int nodes = r["nodes"].get<int>(), c = r["calls"].get<int>();
    EXPECT_EQ(c, nodes * steps) << name << " " << op;
    // Ops of the layer blocks run once per layer per step.
    const int block = r["block_nodes"].get<int>();
    EXPECT_EQ(block % layers, 0) << name << " " << op << ": " << block << " block nodes";
    EXPECT_LE(block, nodes) << name << " " << op;
    EXPECT_GE(r["ms"].get<double>(), 0) << name << " " << op;
    share += r["share_pct"].get<double>();
    ms += r["ms"].get<double>();
    calls[op] += c;
  }
  EXPECT_EQ(calls["attention"], layers * steps) << name;
  EXPECT_EQ(calls["linear"], 7 * layers * steps) << name << ": q, k, v, o, w1, w3, w2 per layer";
  EXPECT_EQ(calls["logits"], steps) << name;
  // The outside-ops time is what the op times leave of the step's wall time, so the
  // shares add up to 100% (up to the JSON's 6 significant digits).
  share += p["outside_ops"]["share_pct"].get<double>();
  ms += p["outside_ops"]["ms"].get<double>();
  EXPECT_NEAR(share, 100.0, 0.01) << name;
  EXPECT_NEAR(ms, p["profiled_wall_ms"].get<double>(), 1e-3 + 1e-4 * ms) << name;
  return calls;
}

TEST(BenchModel, JsonIsConsistentAndTraceHasOneSlicePerOpCall) {
  const std::string trace = ::testing::TempDir() + "bench_model_trace.json";
  std::remove(trace.c_str());
  const Result r = bench(kTiny + " --json --trace '" + trace + "'");
  const nlohmann::json j = parse_one_object(r);
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"model", "run", "machine", "prefill", "decode", "batch", "cpu_over_wall",
                          "peak_rss_bytes", "trace_file"})
    EXPECT_TRUE(j.contains(key)) << key;
  const int layers = j["model"]["n_layers"].get<int>();
  EXPECT_EQ(layers, 2);
  EXPECT_EQ(j["run"]["prompt_len"].get<int>(), 16);
  EXPECT_EQ(j["run"]["gen_len"].get<int>(), 4);
  EXPECT_EQ(j["run"]["profiled_repeats"].get<int>(), 1);
  EXPECT_EQ(j["run"]["decode_feed"].get<std::string>(), "argmax");
  EXPECT_FALSE(j["machine"]["measured"].get<bool>());
  EXPECT_TRUE(j["machine"]["peak_gflops"].is_null());  // --no-peak: not measured, not 0
  EXPECT_TRUE(j["batch"].is_null());
  EXPECT_GT(j["peak_rss_bytes"].get<double>(), 0);
  EXPECT_GT(j["model"]["load_s"].get<double>(), 0);

  expect_rate(j["prefill"]["tokens_per_s"], "prefill tokens/s");
  expect_rate(j["decode"]["tokens_per_s"], "decode tokens/s");
  EXPECT_GT(j["prefill"]["profiled_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["decode"]["profiled_tokens_per_s"].get<double>(), 0);
  EXPECT_TRUE(j["prefill"]["profiling_overhead_pct"].is_number());
  EXPECT_GT(j["prefill"]["gemm"]["flops"].get<double>(), 0);
  EXPECT_GT(j["decode"]["bytes_per_token"].get<double>(), 0);

  std::map<std::string, int> calls = check_phase(j["prefill"], layers, 1, "prefill");
  for (const auto& [op, c] : check_phase(j["decode"], layers, 4, "decode")) calls[op] += c;
  int total = 0;
  for (const auto& kv : calls) total += kv.second;

  // The trace: one complete ("X") event per op call, named after its op.
  const nlohmann::json t = nlohmann::json::parse(read_file(trace), nullptr, false);
  ASSERT_TRUE(t.is_object() && t.contains("traceEvents")) << "trace does not parse: " << trace;
  std::map<std::string, int> seen;
  int x_events = 0;
  for (const nlohmann::json& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++x_events;
    const std::string name = e["name"].get<std::string>();
    const std::string op = name.substr(0, name.find(' '));
    ++seen[op];
    EXPECT_TRUE(calls.count(op)) << name;
    EXPECT_GE(e["ts"].get<double>(), 0) << name;
    EXPECT_GE(e["dur"].get<double>(), 0) << name;
    EXPECT_TRUE(e["cat"] == "prefill" || e["cat"] == "decode") << name;
    EXPECT_TRUE(e["args"].contains("node") && e["args"].contains("rows")) << name;
    if (name.find(" L") != std::string::npos) {
      EXPECT_NE(e["args"]["where"].get<std::string>().find("layer"), std::string::npos) << name;
    }
  }
  EXPECT_EQ(x_events, total);
  EXPECT_EQ(seen, calls);
  std::remove(trace.c_str());
}

TEST(BenchModel, ByLayerListsEveryNodeOnce) {
  const nlohmann::json j = parse_one_object(bench(kTiny + " --json --by-layer"));
  ASSERT_TRUE(j.is_object());
  for (const char* phase : {"prefill", "decode"}) {
    const int steps = j[phase]["profiled_steps"].get<int>();
    int node = -1;
    for (const nlohmann::json& r : j[phase]["ops"]) {
      EXPECT_GT(r["node"].get<int>(), node) << phase;  // every node once, in plan order
      node = r["node"].get<int>();
      EXPECT_EQ(r["calls"].get<int>(), steps) << phase << " " << r["where"];
      EXPECT_FALSE(r["where"].get<std::string>().empty());
    }
  }
}

TEST(BenchModel, BatchReportsBatchedAndSequentialDecode) {
  const nlohmann::json j = parse_one_object(bench(kTiny + " --json --batch 2"));
  ASSERT_TRUE(j.is_object());
  const nlohmann::json& b = j["batch"];
  ASSERT_TRUE(b.is_object()) << j.dump();
  EXPECT_EQ(b["sessions"].get<int>(), 2);
  EXPECT_EQ(b["steps"].get<int>(), 4);
  expect_rate(b["batched_tokens_per_s"], "batched");
  expect_rate(b["sequential_tokens_per_s"], "sequential");
  EXPECT_NEAR(b["ratio"].get<double>(),
              b["batched_tokens_per_s"]["median"].get<double>() /
                  b["sequential_tokens_per_s"]["median"].get<double>(),
              1e-4 * b["ratio"].get<double>());
}

TEST(BenchModel, TextReportNamesItsSections) {
  const Result r = bench(kTiny + " --batch 2");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"prefill ", "decode ", "tokens/s", "profiling overhead", "outside ops",
                        "prefill per op", "decode per op", "batched/sequential", "peak RSS", "cpu/wall"})
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing '" << s << "' in:\n" << r.out;
}

TEST(BenchModel, BadUsageExitsTwo) {
  const std::vector<std::string> cases = {
      "--synthetic no-such-model", kTiny + " --prompt-len 0", kTiny + " --batch 0",
      kTiny + " --gen-len 0", kTiny + " --no-such-option", kTiny + " --repeat x",
      "--prompt-len 16", "--synthetic tiny model.json",
      // the context of tiny is 256 positions
      "--synthetic tiny --prompt-len 250 --gen-len 10 --no-peak"};
  for (const std::string& args : cases) {
    const Result r = bench(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
    EXPECT_TRUE(r.out.empty()) << args << ": usage errors go to stderr";
  }
  EXPECT_NE(bench("--synthetic no-such-model").err.find("no-such-model"), std::string::npos);
}

TEST(BenchModel, MissingModelExitsOneNamingThePath) {
  const std::string path = ::testing::TempDir() + "no_such_model_dir/model.json";
  const Result r = bench("'" + path + "' --prompt-len 4 --gen-len 1 --no-peak");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

TEST(BenchModel, HelpAndAttentionStillDispatch) {
  const Result h = bench("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--synthetic"), std::string::npos);
  const Result a = bench("attention --help");
  EXPECT_EQ(a.code, 0);
  EXPECT_NE(a.out.find("headwise bench attention"), std::string::npos);
}

}  // namespace
}  // namespace headwise::test
