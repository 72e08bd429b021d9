// The executor's gated FFN (graph::Plan::gated; runtime/executor.cpp, gated_ffn): a
// layer's gate, up and swiglu as one gated product on the AMX panels. stories260K
// written as BF16, F16 and Q8_0 GGUFs (its gate and up rows of 64 take the panels; w2's
// rows of 172 are not whole tile steps) gives, where the CPU has AMX, logits identical
// bit for bit with the gated products on and off (graph::set_gated_ffn_override) at
// every position of a 101-token prompt — 96 rows gated and 5 run by the three nodes
// (in a chunk of 101), then a chunk of 8 rows (fewer than the panels take) and decoded
// tokens. The plan marks each layer's gate (never other linear nodes), and describes
// the gated product only where it runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "formats/llama2c_to_gguf.hpp"
#include "formats/quantize_gguf.hpp"
#include "graph/plan.hpp"
#include "graph/weights.hpp"
#include "headwise/model.hpp"
#include "headwise/tokenizer.hpp"
#include "kernels/dispatch.hpp"
#include "tests/runtime/model_fixtures.hpp"

namespace headwise::test {
namespace {

// stories260K as a GGUF of `mix` in the test's temporary folder ("" when it is absent).
std::string stories_gguf(const std::string& mix) {
  const std::string bin = stories_dir() + "stories260K.bin";
  if (!std::ifstream(bin)) return "";
  std::unique_ptr<graph::Llama2cCheckpoint> ckpt;
  EXPECT_TRUE(graph::Llama2cCheckpoint::open(bin, &ckpt).ok());
  std::unique_ptr<Tokenizer> tok;
  EXPECT_TRUE(Tokenizer::load(stories_dir() + "tok512.bin", ckpt->config().vocab_size, &tok).ok());
  const std::string f32 = ::testing::TempDir() + "gated_stories_f32.gguf", out = ::testing::TempDir() + "gated_stories_" + mix + ".gguf";
  Status s = formats::convert_llama2c_to_gguf(*ckpt, *tok, f32);
  EXPECT_TRUE(s.ok()) << s.message();
  std::unique_ptr<formats::GgufFile> in;
  EXPECT_TRUE(formats::GgufFile::open(f32, &in).ok());
  formats::QuantizeReport report;
  s = formats::quantize_gguf(*in, mix, out, 1, &report);
  EXPECT_TRUE(s.ok()) << s.message();
  std::remove(f32.c_str());
  return out;
}

std::shared_ptr<const Model> load(const std::string& path, bool gated) {
  graph::set_gated_ffn_override(gated);
  std::shared_ptr<const Model> m;
  const Status s = Model::load(path, ModelOptions(), &m);
  graph::set_gated_ffn_override(1);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

// Every logit of a 101-token prefill (one chunk), an 8-token one, then 3 decoded tokens.
std::vector<float> logits(const Model& m) {
  SessionOptions o;
  o.threads = 2;
  o.all_logits = true;
  std::unique_ptr<Session> s;
  EXPECT_TRUE(m.open_session(o, &s).ok());
  const int V = m.info().vocab_size;
  std::vector<float> out;
  for (const std::vector<int32_t>& part : {random_tokens(101, V, 5), random_tokens(8, V, 6)}) {
    EXPECT_TRUE(s->prefill(part).ok());
    out.insert(out.end(), s->all_logits().begin(), s->all_logits().end());
  }
  for (int32_t t : {7, 300, 42}) {
    EXPECT_TRUE(s->decode(t).ok());
    out.insert(out.end(), s->logits(), s->logits() + V);
  }
  return out;
}

TEST(GatedFfn, LogitsAreThoseOfTheThreeNodesBitForBit) {
  if (!std::ifstream(stories_dir() + "stories260K.bin")) GTEST_SKIP() << "../shared/models not present";
  const bool amx = kernels::amx_usable();
  for (const char* mix : {"bf16", "f16", "q8_0"}) {
    const std::string path = stories_gguf(mix);
    ASSERT_FALSE(path.empty());
    const auto on = load(path, true), off = load(path, false);
    ASSERT_TRUE(on && off);
    const graph::Plan& plan = on->plan();
    const auto& nodes = plan.graph.nodes;
    int marked = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      EXPECT_FALSE(off->plan().gated[i]) << "node " << i << " with the gated products off";
      if (!plan.gated[i]) continue;
      ++marked;
      ASSERT_LT(i + 2, nodes.size());
      EXPECT_EQ(nodes[i + 2].op, graph::OpKind::swiglu) << nodes[i].where;
    }
    EXPECT_EQ(marked, on->info().n_layers) << mix;
    const std::string plan_text = plan.describe(101, 2);
    EXPECT_EQ(plan_text.find("96 rows → one gated product") != std::string::npos, amx) << mix << "\n" << plan_text;
    EXPECT_EQ(plan.describe(8, 2).find("gated product"), std::string::npos) << mix;
    const std::vector<float> a = logits(*on), b = logits(*off);
    ASSERT_EQ(a.size(), b.size());
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << mix << ": " << differ << " of " << a.size() << " logits differ";
    std::remove(path.c_str());
  }
  if (!amx) std::printf("[ note ] no AMX here: both plans ran the three nodes\n");
}

}  // namespace
}  // namespace headwise::test
