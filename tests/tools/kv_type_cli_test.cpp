// --kv-type on `headwise run`, `headwise bench`, `headwise bench attention` and
// `headwise serve`: each type runs and is reported, the 16-bit cache's bytes are half, and
// a bad value is a clear usage error (exit 2, the message quotes it), never a crash.
#include <fstream>

#include "tests/tools/run_cli.hpp"

namespace headwise::test {
namespace {

const std::string kStories = std::string(HEADWISE_SHARED_DIR) + "/models/stories260K/";

TEST(KvTypeCli, RunAcceptsEachTypeAndRejectsABadOne) {
  if (!std::ifstream(kStories + "stories260K.bin")) GTEST_SKIP() << "../shared/models not present";
  const std::string model = "run '" + kStories + "stories260K.bin' --tokenizer '" + kStories + "tok512.bin'";
  for (const char* t : {"f32", "f16", "bf16"}) {
    const CliResult r = run_headwise(model + " --prompt 'Once upon a time' -n 24 --temp 0 --threads 1 --kv-type " + t);
    EXPECT_EQ(r.code, 0) << t << ": " << r.err;
    EXPECT_NE(r.out.find("Once upon a time"), std::string::npos) << t << ": " << r.out;
  }
  const CliResult bad = run_headwise(model + " --prompt hi -n 4 --kv-type f8");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--kv-type 'f8' is not one of f32, f16, bf16"), std::string::npos) << bad.err;
}

// The JSON value of "key": N in a flat JSON text (enough for these fields).
std::string json_value(const std::string& j, const std::string& key) {
  const size_t at = j.find("\"" + key + "\": ");
  if (at == std::string::npos) return "";
  const size_t b = at + key.size() + 4;
  return j.substr(b, j.find_first_of(",}", b) - b);
}

TEST(KvTypeCli, BenchReportsTypeAndBytes) {
  const std::string common = "bench --synthetic tiny --prompt-len 16 --gen-len 4 --threads 1 "
                             "--warmup 0 --repeat 1 --no-peak --json --kv-type ";
  const CliResult f32 = run_headwise(common + "f32"), f16 = run_headwise(common + "f16");
  ASSERT_EQ(f32.code, 0) << f32.err;
  ASSERT_EQ(f16.code, 0) << f16.err;
  EXPECT_EQ(json_value(f16.out, "kv_type"), "\"f16\"");
  const long long b32 = std::stoll(json_value(f32.out, "kv_bytes_per_token"));
  const long long b16 = std::stoll(json_value(f16.out, "kv_bytes_per_token"));
  EXPECT_EQ(b16 * 2, b32);
  const CliResult bad = run_headwise("bench --synthetic tiny --kv-type q8_0");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--kv-type 'q8_0' is not one of f32, f16, bf16"), std::string::npos) << bad.err;
}

TEST(KvTypeCli, BenchAttentionReadsHalfTheBytes) {
  const std::string common = "bench attention --decode 200 --heads 4 --kv-heads 2 --head-dim 64 "
                             "--threads 1 --repeat 2 --warmup 0 --no-peak --json --kv-type ";
  for (const char* t : {"f16", "bf16"}) {
    const CliResult r = run_headwise(common + t);
    ASSERT_EQ(r.code, 0) << t << ": " << r.err;
    EXPECT_EQ(json_value(r.out, "kv_type"), std::string("\"") + t + "\"");
    EXPECT_EQ(json_value(r.out, "kv_bytes"), std::to_string(2 * 200 * 2 * 64 * 2)) << r.out;
  }
  const CliResult bad = run_headwise(common + "fp16");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--kv-type 'fp16'"), std::string::npos) << bad.err;
}

TEST(KvTypeCli, ServeRejectsABadType) {
  // checked before the model loads or a port is bound
  const CliResult bad = run_headwise("serve --synthetic tiny --port 0 --kv-type half");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--kv-type 'half' is not one of f32, f16, bf16"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace headwise::test
