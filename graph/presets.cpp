#include "graph/presets.hpp"

namespace headwise::graph {
namespace {

NodeDesc node(OpKind op, std::vector<std::string> in, std::vector<std::string> out,
              std::string weight = "", std::string bias = "") {
  NodeDesc n;
  n.op = op;
  n.in = std::move(in);
  n.out = std::move(out);
  n.weight = std::move(weight);
  n.bias = std::move(bias);
  return n;
}

NodeDesc linear_in_out(std::vector<std::string> in, std::vector<std::string> out,
                       const std::string& weight, const std::string& bias) {
  NodeDesc n = node(OpKind::linear, std::move(in), std::move(out), weight, bias);
  n.layout = WeightLayout::in_out;
  return n;
}

void name_nodes(ModelDesc* d) {
  for (auto [key, sec] : {std::pair{"embed", &d->embed}, {"block", &d->block}, {"head", &d->head}})
    for (size_t i = 0; i < sec->size(); ++i)
      (*sec)[i].where = std::string(key) + "[" + std::to_string(i) + "] (" + op_name((*sec)[i].op) + ")";
}

std::string layer_name(const std::string& pattern, int l) {
  std::string r = pattern;
  r.replace(r.find("{layer}"), 7, std::to_string(l));
  return r;
}

}  // namespace

Settings llama2c_settings(const Llama2cConfig& c) {
  Settings st;
  st.vocab_size = c.vocab_size;
  st.d_model = c.dim;
  st.n_layers = c.n_layers;
  st.n_heads = c.n_heads;
  st.n_kv_heads = c.n_kv_heads;
  st.head_dim = c.head_size();
  st.max_seq_len = c.seq_len;
  st.norm_eps = 1e-5f;
  st.rope_theta = 10000.0f;
  st.rope_style = kernels::RopeStyle::interleaved;
  return st;
}

Preset llama_preset(const Settings& s, int hidden, bool tied, const std::string& name) {
  Preset p;
  ModelDesc& d = p.desc;
  d.name = name;
  d.settings = s;
  using K = OpKind;
  const std::string L = "layers.{layer}.";
  d.embed = {node(K::embedding, {"tokens"}, {"x"}, "tok_embeddings.weight")};
  d.block = {
      node(K::rmsnorm, {"x"}, {"h"}, L + "attention_norm.weight"),
      node(K::linear, {"h"}, {"q"}, L + "attention.wq.weight"),
      node(K::linear, {"h"}, {"k"}, L + "attention.wk.weight"),
      node(K::linear, {"h"}, {"v"}, L + "attention.wv.weight"),
      node(K::rope, {"q"}, {"q"}),
      node(K::rope, {"k"}, {"k"}),
      node(K::attention, {"q", "k", "v"}, {"a"}),
      node(K::linear, {"a"}, {"o"}, L + "attention.wo.weight"),
      node(K::add, {"x", "o"}, {"x"}),
      node(K::rmsnorm, {"x"}, {"h"}, L + "ffn_norm.weight"),
      node(K::linear, {"h"}, {"g"}, L + "feed_forward.w1.weight"),
      node(K::linear, {"h"}, {"u"}, L + "feed_forward.w3.weight"),
      node(K::swiglu, {"g", "u"}, {"f"}),
      node(K::linear, {"f"}, {"o"}, L + "feed_forward.w2.weight"),
      node(K::add, {"x", "o"}, {"x"}),
  };
  d.head = {
      node(K::rmsnorm, {"x"}, {"h"}, "norm.weight"),
      node(K::logits, {"h"}, {"logits"}, tied ? "tok_embeddings.weight" : "output.weight"),
  };
  name_nodes(&d);

  const int64_t D = s.d_model, H = hidden, QW = int64_t(s.n_heads) * s.head_dim,
                KVW = int64_t(s.n_kv_heads) * s.head_dim, V = s.vocab_size;
  p.tensors.push_back({"tok_embeddings.weight", {V, D}, D});
  for (int l = 0; l < s.n_layers; ++l) {
    auto t = [&](const char* pat, std::vector<int64_t> shape, int64_t fan_in) {
      p.tensors.push_back({layer_name(L + pat, l), std::move(shape), fan_in});
    };
    t("attention_norm.weight", {D}, 0);
    t("attention.wq.weight", {QW, D}, D);
    t("attention.wk.weight", {KVW, D}, D);
    t("attention.wv.weight", {KVW, D}, D);
    t("attention.wo.weight", {D, QW}, QW);
    t("ffn_norm.weight", {D}, 0);
    t("feed_forward.w1.weight", {H, D}, D);
    t("feed_forward.w2.weight", {D, H}, H);
    t("feed_forward.w3.weight", {H, D}, D);
  }
  p.tensors.push_back({"norm.weight", {D}, 0});
  if (!tied) p.tensors.push_back({"output.weight", {V, D}, D});
  return p;
}

Preset gpt2_preset(const Settings& s, const std::string& name) {
  Preset p;
  ModelDesc& d = p.desc;
  d.name = name;
  d.settings = s;
  using K = OpKind;
  const std::string L = "h.{layer}.";
  const int D = s.d_model;
  d.embed = {node(K::embedding, {"tokens"}, {"x"}, "wte.weight"),
             node(K::pos_embedding, {"x"}, {"x"}, "wpe.weight")};
  NodeDesc qkv = linear_in_out({"h"}, {"q", "k", "v"}, L + "attn.c_attn.weight", L + "attn.c_attn.bias");
  qkv.split = {D, D, D};
  NodeDesc gelu = node(K::gelu, {"f"}, {"f"});
  gelu.gelu_tanh = true;
  d.block = {
      node(K::layernorm, {"x"}, {"h"}, L + "ln_1.weight", L + "ln_1.bias"),
      qkv,
      node(K::attention, {"q", "k", "v"}, {"a"}),
      linear_in_out({"a"}, {"o"}, L + "attn.c_proj.weight", L + "attn.c_proj.bias"),
      node(K::add, {"x", "o"}, {"x"}),
      node(K::layernorm, {"x"}, {"h"}, L + "ln_2.weight", L + "ln_2.bias"),
      linear_in_out({"h"}, {"f"}, L + "mlp.c_fc.weight", L + "mlp.c_fc.bias"),
      gelu,
      linear_in_out({"f"}, {"o"}, L + "mlp.c_proj.weight", L + "mlp.c_proj.bias"),
      node(K::add, {"x", "o"}, {"x"}),
  };
  d.head = {node(K::layernorm, {"x"}, {"h"}, "ln_f.weight", "ln_f.bias"),
            node(K::logits, {"h"}, {"logits"}, "wte.weight")};
  name_nodes(&d);

  const int64_t V = s.vocab_size, P = s.max_seq_len, F = 4 * int64_t(D);
  p.tensors.push_back({"wte.weight", {V, D}, D});
  p.tensors.push_back({"wpe.weight", {P, D}, D});
  for (int l = 0; l < s.n_layers; ++l) {
    auto t = [&](const char* pat, std::vector<int64_t> shape, int64_t fan_in, bool bias = false) {
      p.tensors.push_back({layer_name(L + pat, l), std::move(shape), fan_in, bias});
    };
    t("ln_1.weight", {D}, 0);
    t("ln_1.bias", {D}, D, true);
    t("attn.c_attn.weight", {D, 3 * int64_t(D)}, D);
    t("attn.c_attn.bias", {3 * int64_t(D)}, D, true);
    t("attn.c_proj.weight", {D, D}, D);
    t("attn.c_proj.bias", {D}, D, true);
    t("ln_2.weight", {D}, 0);
    t("ln_2.bias", {D}, D, true);
    t("mlp.c_fc.weight", {D, F}, D);
    t("mlp.c_fc.bias", {F}, D, true);
    t("mlp.c_proj.weight", {F, D}, F);
    t("mlp.c_proj.bias", {D}, F, true);
  }
  p.tensors.push_back({"ln_f.weight", {D}, 0});
  p.tensors.push_back({"ln_f.bias", {D}, D, true});
  return p;
}

}  // namespace headwise::graph
