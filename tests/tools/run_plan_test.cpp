// `headwise run` and the plan: --verbose prints what the plan decided per node, and an
// unusable HEADWISE_ISA stops the load with a message naming it (not the first
// attention node, not a crash).
#include <gtest/gtest.h>

#include "kernels/attention/attention.hpp"
#include "tests/tools/run_cli.hpp"

namespace headwise::test {
namespace {

TEST(RunPlan, VerbosePrintsThePlanPerNode) {
  const CliResult r = run_headwise("run --steps 3 --threads 1 --verbose --prompt 'Once upon a time'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("plan: isa "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("attention kernel attn_fwd_f32_"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("element-wise table elementwise_f32__"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("] linear "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemv_blocked:"), std::string::npos) << "the 1-row kernel of each projection\n" << r.err;
  // where decode asks for the keys ahead of those it reads: this CPU's choice
  const std::string ahead = kernels::cpu_attn_ahead() == kernels::AttnAhead::l2 ? "L2" : "L1";
  EXPECT_NE(r.err.find("key chunk(s) on 1 thread(s), keys ahead asked for into " + ahead), std::string::npos) << r.err;
}

TEST(RunPlan, UnusableIsaFailsTheLoadNamingTheVariable) {
  for (const char* env : {"HEADWISE_ISA=bogus", "HEADWISE_ISA=avx1024"}) {
    const CliResult r = run_headwise("run --steps 2 --threads 1", env);
    EXPECT_EQ(r.code, 1) << env << "\n" << r.err;
    EXPECT_NE(r.err.find("HEADWISE_ISA"), std::string::npos) << env << "\n" << r.err;
    EXPECT_EQ(r.out, "") << env << ": nothing generated";
  }
}

TEST(RunPlan, UnusableAmxSettingFailsTheLoadNamingTheVariable) {
  const CliResult r = run_headwise("run --steps 2 --threads 1", "HEADWISE_AMX=yes");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("HEADWISE_AMX='yes' is not 0 or 1"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "nothing generated";
  // HEADWISE_AMX=0 always loads, and its plan names no amx line
  const CliResult off = run_headwise("run --steps 2 --threads 1 --verbose --temp 0", "HEADWISE_AMX=0");
  ASSERT_EQ(off.code, 0) << off.err;
  EXPECT_EQ(off.err.find("__amx"), std::string::npos) << off.err;
}

TEST(RunPlan, ScalarIsaRunsAndSaysSo) {
  const CliResult r = run_headwise("run --steps 3 --threads 1 --verbose --temp 0", "HEADWISE_ISA=scalar");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("plan: isa scalar"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemv_blocked:scalar"), std::string::npos) << r.err;
  // every table the plan selected is the scalar line of its list
  EXPECT_NE(r.err.find("element-wise table elementwise_f32__scalar, KV-cache converters kv_convert__scalar"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("attention kernel attn_fwd_f32_q4k64__scalar"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace headwise::test
