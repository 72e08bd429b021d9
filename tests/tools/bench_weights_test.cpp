// `headwise bench --synthetic NAME --weights TYPE` (tools/bench_weights.cpp): every mix
// loads, runs and is named in the output with what the matrices became (on tiny, whose
// rows of 64 and 172 are not whole K-quant blocks, so the fallbacks of
// formats/quantize_gguf show too); a bad type, or --weights on a MODEL path, is a usage
// error (exit 2) naming --weights. Nothing here depends on timing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/dispatch.hpp"
#include "tests/tools/run_cli.hpp"

namespace headwise::test {
namespace {

const std::string kTiny =
    "bench --synthetic tiny --prompt-len 16 --gen-len 4 --repeat 1 --warmup 0 --threads 1 --no-peak";

TEST(BenchWeights, EveryMixRunsAndIsNamed) {
  // tiny: 2 layers, d 64, ff 172, tied embedding. Rows of 64 (wq..wo, w1, w3, embedding)
  // take the mix's type, K-quants falling back to q8_0 (Q3_K: q4_0; 64 % 256 ≠ 0); w2's rows of 172
  // are not whole 32-blocks: f16 under every block type.
  const struct {
    const char* mix;
    const char* types;
  } cases[] = {{"bf16", "bf16 ×15"},          {"f16", "f16 ×15"},          {"q8_0", "f16 ×2, q8_0 ×13"},
               {"q4_0", "f16 ×2, q4_0 ×13"},  {"q4_k", "f16 ×2, q8_0 ×13"}, {"q6_k", "f16 ×2, q8_0 ×13"},
               {"q5_k", "f16 ×2, q8_0 ×13"},  {"Q4_K_M", "f16 ×2, q8_0 ×13"}, {"q5_k_m", "f16 ×2, q8_0 ×13"},
               // Q3_K falls back to q4_0; q3_k_m's attn_v/attn_output (Q5_K/Q4_K) to q8_0
               {"q3_k", "f16 ×2, q4_0 ×13"},  {"q3_k_m", "f16 ×2, q4_0 ×9, q8_0 ×4"},
               {"iq4_xs", "f16 ×2, q8_0 ×13"},
               // Q2_K and its Q3_K (attn_v, attn_output) fall back to q4_0
               {"q2_k", "f16 ×2, q4_0 ×13"}};
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

// The bytes one decoded token reads (and so "% of bandwidth") count the weights in their
// stored type: a bf16 model reads half the f32 bytes in its projections, q8_0 about 34/32
// bytes per weight. Before this was checked, every type was counted at 4 bytes per weight.
TEST(BenchWeights, BytesPerTokenCountTheStoredType) {
  auto bytes = [](const std::string& weights) {
    const CliResult r = run_headwise(kTiny + (weights.empty() ? "" : " --weights " + weights) + " --json");
    EXPECT_EQ(r.code, 0) << weights << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_object() ? j["decode"]["bytes_per_token"].get<double>() : 0.0;
  };
  const double f32 = bytes(""), bf16 = bytes("bf16"), q8 = bytes("q8_0");
  // tiny's projections are ~527 KB in f32; its KV cache at 20 positions is ~20 KB and the
  // norms a few hundred bytes, so bf16 lands near 0.52 of f32: 0.6 leaves room for those.
  EXPECT_LT(bf16, 0.6 * f32) << "f32 " << f32 << ", bf16 " << bf16;
  EXPECT_GT(bf16, 0.4 * f32) << "f32 " << f32 << ", bf16 " << bf16;
  EXPECT_LT(q8, bf16) << "bf16 " << bf16 << ", q8_0 " << q8;
}

// A MODEL file keeps its stored types, and its prefill GEMMs are reported against the
// peak of the arithmetic those run on: a BF16 file's against the bf16 dot peak (against
// the FMA peak alone a BF16 GGUF of llama-134m read "145% of peak") — or, where the CPU
// has AMX (and HEADWISE_AMX is not 0), the AMX bf16 tile peak the probe measures, and an
// F16 file's against a third of it (three products a value); without AMX an F16 file's
// GEMMs have the FMA peak only. A file that mixes float and integer matrices
// (stories260K's w2 rows of 172 stay f16 under q8_0) gets no type peak — its f16 GEMMs
// run on the FMA peak the line above already names.
TEST(BenchWeights, AFileIsMeasuredAgainstItsStoredTypes) {
  const std::string stories = std::string(HEADWISE_SHARED_DIR) + "/models/stories260K/";
  if (!std::ifstream(stories + "stories260K.bin")) GTEST_SKIP() << "../shared/models not present";
  const struct {
    const char* type;
    const char* types;
    bool type_peak;
  } cases[] = {{"bf16", "bf16 ×36", true}, {"f16", "f16 ×36", true}, {"q8_0", "f16 ×5, q8_0 ×31", false}};
  const bool amx = kernels::amx_detected();
  for (const auto& c : cases) {
    const std::string gguf = ::testing::TempDir() + "bench_stored_" + c.type + ".gguf";
    const CliResult conv = run_headwise("convert llama2c '" + stories + "stories260K.bin' --tokenizer '" + stories +
                                        "tok512.bin' --weights " + c.type + " -o '" + gguf + "'");
    ASSERT_EQ(conv.code, 0) << conv.err;
    const std::string bench =
        "bench '" + gguf + "' --prompt-len 16 --gen-len 4 --repeat 1 --warmup 0 --threads 1";
    const bool f16 = std::string(c.type) == "f16";
    for (bool amx_on : {false, true}) {
      if (amx_on && !amx) break;
      const std::string env = amx_on ? "" : "HEADWISE_AMX=0";
      const CliResult r = run_headwise(bench + " --json", env);
      ASSERT_EQ(r.code, 0) << c.type << "\n" << r.err;
      const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
      ASSERT_TRUE(j.is_object()) << r.out;
      EXPECT_EQ(j["model"]["weights"], "as stored");
      EXPECT_EQ(j["model"]["weight_types"], c.types);
      // bf16 has a dot product of its own on AVX-512 only (elsewhere it is widened to
      // fp32); f16 a peak of its own only on AMX's tiles.
      const bool expect_peak = c.type_peak && j["run"]["isa"] == "avx512" && (!f16 || amx_on);
      EXPECT_EQ(j["prefill"]["gemm_type_peak"].is_number(), expect_peak)
          << c.type << " " << env << " " << j["prefill"].dump();
      if (!expect_peak) continue;
      EXPECT_GT(j["prefill"]["gemm_type_peak"].get<double>(), 0);
      EXPECT_EQ(j["machine"]["tile_bf16_nt_gflops"].is_number(), amx_on) << j["machine"].dump();
      const CliResult t = run_headwise(bench, env);
      ASSERT_EQ(t.code, 0) << t.err;
      EXPECT_NE(t.out.find(std::string("as stored: matrices ") + c.types), std::string::npos) << t.out;
      const std::string peak = !amx_on ? "(bf16 dot peak" : f16 ? "(a third of the AMX bf16 tile peak" : "(AMX bf16 tile peak";
      EXPECT_NE(t.out.find(peak + ": the arithmetic of the stored matrices)"), std::string::npos) << env << "\n" << t.out;
      EXPECT_EQ(t.out.find("AMX bf16 tiles") != std::string::npos, amx_on) << env << "\n" << t.out;  // the machine line
    }
    std::remove(gguf.c_str());
  }
}

TEST(BenchWeights, BadTypeOrModelPathIsAUsageError) {
  for (const std::string& args : {kTiny + " --weights iq2_xs", kTiny + " --weights", std::string("bench model.json --weights q4_0")}) {
    const CliResult r = run_headwise(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("--weights"), std::string::npos) << args << "\n" << r.err;
  }
  EXPECT_NE(run_headwise(kTiny + " --weights iq2_xs").err.find("iq2_xs"), std::string::npos);
}

}  // namespace
}  // namespace headwise::test
