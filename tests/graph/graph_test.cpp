// Building the graph: weights are checked against the shapes the description implies
// (errors name the node and the tensor), every tensor must be used, and the memory plan
// never lets two live values share memory.
#include <gtest/gtest.h>

#include <deque>

#include "graph/graph.hpp"
#include "graph/presets.hpp"
#include "tests/graph/small_model.hpp"

namespace headwise::graph {
namespace {

Settings small() { return small_settings(); }

std::unique_ptr<WeightSet> weights_for(const Preset& p, const std::string& rename = "",
                                       std::vector<int64_t> reshape = {}, bool extra = false) {
  std::deque<std::vector<float>> data;
  std::vector<TensorView> views;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    data.emplace_back(n, 0.01f);
    TensorView v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.data = reinterpret_cast<const uint8_t*>(data.back().data());
    v.nbytes = n * 4;
    views.push_back(v);
  };
  for (const TensorSpec& t : p.tensors) {
    if (t.name == rename && reshape.empty()) {
      add(t.name + ".renamed", t.shape);
      continue;
    }
    add(t.name, t.name == rename ? reshape : t.shape);
  }
  if (extra) add("stray.weight", {3});
  return WeightSet::in_memory(std::move(views), std::move(data), "mem.safetensors");
}

Status build(const Preset& p, std::unique_ptr<WeightSet> w, Graph* g) {
  ModelDesc d = p.desc;
  d.path = "model.json";
  return build_graph(d, std::move(w), g);
}

TEST(Graph, LlamaBuildsAndPlans) {
  const Preset p = llama_preset(small(), 24, true, "t");
  Graph g;
  const Status s = build(p, weights_for(p), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g.kv_slots, 2);
  EXPECT_EQ(g.nodes.size(), 1 + 2 * 15 + 2u);
  // K and V values feeding attention live in cache slots; RoPE on k shares k's buffer.
  int kv_values = 0;
  for (const Value& v : g.values)
    if (v.kv_slot >= 0) ++kv_values;
  EXPECT_EQ(kv_values, 2 * 3);  // per layer: k (linear out), k (rope out), v

  // No two groups alive at the same node overlap in the arena.
  int64_t sum = 0;
  for (size_t a = 0; a < g.groups.size(); ++a) {
    const Group& A = g.groups[a];
    sum += A.cols;
    EXPECT_EQ(A.offset % 16, 0);
    EXPECT_LE(A.offset + A.cols, g.arena_cols);
    for (size_t b = a + 1; b < g.groups.size(); ++b) {
      const Group& B = g.groups[b];
      const bool live_together = !(A.last < B.first || B.last < A.first);
      const bool overlap = A.offset < B.offset + B.cols && B.offset < A.offset + A.cols;
      EXPECT_FALSE(live_together && overlap) << "groups " << a << " and " << b;
    }
  }
  EXPECT_LT(g.arena_cols, sum) << "the plan should reuse memory";
}

TEST(Graph, Gpt2FusedQkvBuilds) {
  Settings s = small();
  s.n_kv_heads = 4;
  const Preset p = gpt2_preset(s, "g");
  Graph g;
  const Status st = build(p, weights_for(p), &g);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(g.nodes[3].out.size(), 3u);  // embed (2 nodes), layernorm, fused qkv
}

TEST(Graph, MissingTensorNamesNodeAndTensor) {
  const Preset p = llama_preset(small(), 24, true, "t");
  Graph g;
  const Status s = build(p, weights_for(p, "layers.1.attention.wk.weight"), &g);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find("block[2] (linear), layer 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'layers.1.attention.wk.weight'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("mem.safetensors"), std::string::npos) << s.message();
}

TEST(Graph, WrongShapeNamesTensorAndShapes) {
  const Preset p = llama_preset(small(), 24, true, "t");
  Graph g;
  Status s = build(p, weights_for(p, "layers.0.feed_forward.w2.weight", {16, 20}), &g);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find("layers.0.feed_forward.w2.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[16, 20]"), std::string::npos) << s.message();
  s = build(p, weights_for(p, "norm.weight", {15}), &g);
  EXPECT_NE(s.message().find("norm.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expected [16]"), std::string::npos) << s.message();
  s = build(p, weights_for(p, "tok_embeddings.weight", {31, 16}), &g);
  EXPECT_NE(s.message().find("vocab_size"), std::string::npos) << s.message();
}

TEST(Graph, ExtraTensorIsAnError) {
  const Preset p = llama_preset(small(), 24, true, "t");
  Graph g;
  const Status s = build(p, weights_for(p, "", {}, true), &g);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find("'stray.weight' is not used"), std::string::npos) << s.message();
}

TEST(Graph, UndefinedInputAndMissingLogits) {
  Preset p = llama_preset(small(), 24, true, "t");
  p.desc.block[8].in[1] = "oo";
  Graph g;
  Status s = build(p, weights_for(p), &g);
  EXPECT_NE(s.message().find("block[8] (add), layer 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'oo'"), std::string::npos) << s.message();

  p = llama_preset(small(), 24, true, "t");
  p.desc.head.pop_back();
  Graph g2;
  auto w = weights_for(p);
  s = build(p, std::move(w), &g2);
  EXPECT_NE(s.message().find("logits"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace headwise::graph
