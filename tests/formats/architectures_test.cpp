// Architectures as descriptions: what each one's block holds, that the descriptions
// survive the JSON format (head_rmsnorm, rope_freq_factors), the Llama 3 frequency
// factors, and errors naming the architecture.
#include <gtest/gtest.h>

#include <cmath>

#include "formats/architectures.hpp"
#include "graph/description.hpp"
#include "graph/rope_scaling.hpp"

namespace headwise::formats {
namespace {

ArchConfig config(const std::string& arch) {
  ArchConfig c;
  c.arch = arch;
  c.settings.vocab_size = 100;
  c.settings.d_model = 64;
  c.settings.n_layers = 2;
  c.settings.n_heads = 4;
  c.settings.n_kv_heads = 2;
  c.settings.head_dim = 16;
  c.settings.max_seq_len = 32;
  c.ffn_hidden = 128;
  return c;
}

int count(const graph::ModelDesc& d, graph::OpKind op) {
  int n = 0;
  for (const auto& node : d.block) n += node.op == op;
  return n;
}

TEST(Architectures, BlocksHoldWhatEachArchitectureNeeds) {
  graph::ModelDesc d;
  ASSERT_TRUE(describe(config("qwen3"), Naming::gguf, "m.gguf", &d).ok());
  EXPECT_EQ(count(d, graph::OpKind::head_rmsnorm), 2);
  EXPECT_EQ(d.block[4].weight, "blk.{layer}.attn_q_norm.weight");
  ASSERT_TRUE(describe(config("qwen2"), Naming::hf, "cfg.json", &d).ok());
  EXPECT_EQ(d.block[1].bias, "model.layers.{layer}.self_attn.q_proj.bias");
  EXPECT_EQ(count(d, graph::OpKind::head_rmsnorm), 0);
  ArchConfig tied = config("llama");
  tied.tied = true;
  ASSERT_TRUE(describe(tied, Naming::hf, "cfg.json", &d).ok());
  EXPECT_EQ(d.head.back().weight, "model.embed_tokens.weight");
  EXPECT_TRUE(d.block[1].bias.empty());
  ArchConfig g = config("gpt2");
  g.settings.n_kv_heads = 4;
  g.tied = true;
  ASSERT_TRUE(describe(g, Naming::hf, "cfg.json", &d).ok());
  EXPECT_EQ(d.block[1].layout, graph::WeightLayout::in_out);  // HF Conv1D
  ASSERT_TRUE(describe(g, Naming::gguf, "m.gguf", &d).ok());
  EXPECT_EQ(d.block[1].layout, graph::WeightLayout::out_in);  // llama.cpp transposed it
  EXPECT_EQ(d.block[1].split, (std::vector<int>{64, 64, 64}));
}

TEST(Architectures, UnknownArchitectureIsNamedWithTheSupportedOnes) {
  graph::ModelDesc d;
  Status s = describe(config("falcon"), Naming::gguf, "m.gguf", &d);
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_NE(s.message().find("m.gguf: architecture 'falcon' is not supported (supported: gpt2, llama, mistral, qwen2, qwen3)"),
            std::string::npos)
      << s.message();
}

TEST(Architectures, DescriptionsRoundTripThroughJson) {
  ArchConfig c = config("qwen3");
  c.settings.rope_freq_factors = {1, 1.5f, 2, 2, 4, 8, 8, 8};
  graph::ModelDesc d;
  ASSERT_TRUE(describe(c, Naming::hf, "cfg.json", &d).ok());
  const std::string json = graph::description_to_json(d, "model.safetensors", "");
  graph::ModelDesc back;
  Status s = graph::parse_description(json, "/tmp/x/model.json", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(back.settings.rope_freq_factors, c.settings.rope_freq_factors);
  EXPECT_EQ(back.block[4].op, graph::OpKind::head_rmsnorm);
  // A factor list of the wrong length is refused.
  std::string bad = json;
  bad.replace(bad.find("\"rope_freq_factors\""), 19, "\"rope_freq_factorz\"");
  EXPECT_FALSE(graph::parse_description(bad, "/tmp/x/model.json", &back).ok());
}

// Meta's apply_scaling for Llama 3.1 (factor 8, low 1, high 4, original 8192, θ 500000,
// head_dim 128), written out independently: high frequencies keep f = 1, low ones 8,
// the band between interpolates smoothly and monotonically.
TEST(Architectures, Llama3FrequencyFactors) {
  const std::vector<float> f = graph::llama3_rope_freq_factors(500000, 128, 8, 1, 4, 8192);
  ASSERT_EQ(f.size(), 64u);
  for (int i = 0; i < 64; ++i) {
    const double freq = std::pow(500000.0, -2.0 * i / 128);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < 8192 / 4.0) {
      EXPECT_EQ(f[i], 1.0f) << i;
    } else if (wavelen > 8192 / 1.0) {
      EXPECT_EQ(f[i], 8.0f) << i;
    } else {
      const double smooth = (8192 / wavelen - 1) / (4 - 1);
      const double scaled = (1 - smooth) * freq / 8 + smooth * freq;  // Meta's formula
      EXPECT_NEAR(f[i], freq / scaled, 1e-5) << i;
    }
    if (i > 0) {
      EXPECT_GE(f[i], f[i - 1]);
    }
  }
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[63], 8.0f);
}

}  // namespace
}  // namespace headwise::formats
