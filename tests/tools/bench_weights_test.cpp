// `headwise bench --synthetic NAME --weights TYPE` (tools/bench_weights.cpp): every mix
// loads, runs and is named in the output with what the matrices became (on tiny, whose
// rows of 64 and 172 are not whole K-quant blocks, so the fallbacks of
// formats/quantize_gguf show too); a bad type, or --weights on a MODEL path, is a usage
// error (exit 2) naming --weights. Nothing here depends on timing.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/run_cli.hpp"

namespace headwise::test {
namespace {

const std::string kTiny =
    "bench --synthetic tiny --prompt-len 16 --gen-len 4 --repeat 1 --warmup 0 --threads 1 --no-peak";

TEST(BenchWeights, EveryMixRunsAndIsNamed) {
  // tiny: 2 layers, d 64, ff 172, tied embedding. Rows of 64 (wq..wo, w1, w3, embedding)
  // take the mix's type, K-quants falling back to q8_0 (64 % 256 ≠ 0); w2's rows of 172
  // are not whole 32-blocks: f16 under every block type.
  const struct {
    const char* mix;
    const char* types;
  } cases[] = {{"bf16", "bf16 ×15"},          {"f16", "f16 ×15"},          {"q8_0", "f16 ×2, q8_0 ×13"},
               {"q4_0", "f16 ×2, q4_0 ×13"},  {"q4_k", "f16 ×2, q8_0 ×13"}, {"q6_k", "f16 ×2, q8_0 ×13"},
               {"Q4_K_M", "f16 ×2, q8_0 ×13"}};
  for (const auto& c : cases) {
    const CliResult r = run_headwise(kTiny + " --weights " + c.mix + " --json");
    ASSERT_EQ(r.code, 0) << c.mix << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["model"]["weights"], c.mix) << r.out;
    EXPECT_EQ(j["model"]["weight_types"], c.types) << c.mix;
    EXPECT_GT(j["prefill"]["tokens_per_s"]["median"].get<double>(), 0) << c.mix;
  }
  const CliResult t = run_headwise(kTiny + " --weights q4_0");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("--weights q4_0: matrices f16 ×2, q4_0 ×13"), std::string::npos) << t.out;
}

TEST(BenchWeights, BadTypeOrModelPathIsAUsageError) {
  for (const std::string& args : {kTiny + " --weights q3_k", kTiny + " --weights", std::string("bench model.json --weights q4_0")}) {
    const CliResult r = run_headwise(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("--weights"), std::string::npos) << args << "\n" << r.err;
  }
  EXPECT_NE(run_headwise(kTiny + " --weights q3_k").err.find("q3_k"), std::string::npos);
}

}  // namespace
}  // namespace headwise::test
