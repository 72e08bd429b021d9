#include "formats/architectures.hpp"

namespace headwise::formats {
namespace {

using graph::NodeDesc;
using graph::OpKind;

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

void name_nodes(graph::ModelDesc* d) {
  for (auto [key, sec] : {std::pair{"embed", &d->embed}, {"block", &d->block}, {"head", &d->head}})
    for (size_t i = 0; i < sec->size(); ++i)
      (*sec)[i].where = std::string(key) + "[" + std::to_string(i) + "] (" + graph::op_name((*sec)[i].op) + ")";
}

// The tensor names of one format for the llama family.
struct LlamaNames {
  std::string embed, attn_norm, q, k, v, q_norm, k_norm, o, ffn_norm, gate, up, down, norm, output;
};

LlamaNames llama_names(Naming n) {
  if (n == Naming::gguf) {
    const std::string L = "blk.{layer}.";
    return {"token_embd", L + "attn_norm", L + "attn_q", L + "attn_k", L + "attn_v",
            L + "attn_q_norm", L + "attn_k_norm", L + "attn_output", L + "ffn_norm",
            L + "ffn_gate", L + "ffn_up", L + "ffn_down", "output_norm", "output"};
  }
  const std::string L = "model.layers.{layer}.";
  return {"model.embed_tokens", L + "input_layernorm", L + "self_attn.q_proj", L + "self_attn.k_proj",
          L + "self_attn.v_proj", L + "self_attn.q_norm", L + "self_attn.k_norm", L + "self_attn.o_proj",
          L + "post_attention_layernorm", L + "mlp.gate_proj", L + "mlp.up_proj", L + "mlp.down_proj",
          "model.norm", "lm_head"};
}

void describe_llama(const ArchConfig& c, Naming naming, graph::ModelDesc* d) {
  using K = OpKind;
  const LlamaNames t = llama_names(naming);
  const bool qk_norm = c.arch == "qwen3";
  const bool qkv_bias = c.arch == "qwen2" || c.attn_bias;
  auto w = [](const std::string& s) { return s + ".weight"; };
  auto b = [](bool on, const std::string& s) { return on ? s + ".bias" : std::string(); };
  d->embed = {node(K::embedding, {"tokens"}, {"x"}, w(t.embed))};
  d->block = {node(K::rmsnorm, {"x"}, {"h"}, w(t.attn_norm)),
              node(K::linear, {"h"}, {"q"}, w(t.q), b(qkv_bias, t.q)),
              node(K::linear, {"h"}, {"k"}, w(t.k), b(qkv_bias, t.k)),
              node(K::linear, {"h"}, {"v"}, w(t.v), b(qkv_bias, t.v))};
  if (qk_norm) {
    d->block.push_back(node(K::head_rmsnorm, {"q"}, {"q"}, w(t.q_norm)));
    d->block.push_back(node(K::head_rmsnorm, {"k"}, {"k"}, w(t.k_norm)));
  }
  const std::vector<NodeDesc> rest = {
      node(K::rope, {"q"}, {"q"}),
      node(K::rope, {"k"}, {"k"}),
      node(K::attention, {"q", "k", "v"}, {"a"}),
      node(K::linear, {"a"}, {"o"}, w(t.o), b(c.out_bias, t.o)),
      node(K::add, {"x", "o"}, {"x"}),
      node(K::rmsnorm, {"x"}, {"h"}, w(t.ffn_norm)),
      node(K::linear, {"h"}, {"g"}, w(t.gate), b(c.mlp_bias, t.gate)),
      node(K::linear, {"h"}, {"u"}, w(t.up), b(c.mlp_bias, t.up)),
      node(K::swiglu, {"g", "u"}, {"f"}),
      node(K::linear, {"f"}, {"o"}, w(t.down), b(c.mlp_bias, t.down)),
      node(K::add, {"x", "o"}, {"x"}),
  };
  d->block.insert(d->block.end(), rest.begin(), rest.end());
  d->head = {node(K::rmsnorm, {"x"}, {"h"}, w(t.norm)),
             node(K::logits, {"h"}, {"logits"}, c.tied ? w(t.embed) : w(t.output))};
}

void describe_gpt2(const ArchConfig& c, Naming naming, graph::ModelDesc* d) {
  using K = OpKind;
  const int D = c.settings.d_model;
  // GGUF (llama.cpp's converter transposes HF's Conv1D weights): [out][in] matrices.
  // HF: Conv1D keeps [in][out].
  const bool gguf = naming == Naming::gguf;
  const std::string P = c.hf_prefix, L = gguf ? "blk.{layer}." : P + "h.{layer}.";
  auto lin = [&](std::vector<std::string> in, std::vector<std::string> out, const std::string& name) {
    NodeDesc n = node(K::linear, std::move(in), std::move(out), name + ".weight", name + ".bias");
    n.layout = gguf ? graph::WeightLayout::out_in : graph::WeightLayout::in_out;
    return n;
  };
  auto norm = [&](const std::string& name) {
    return node(K::layernorm, {"x"}, {"h"}, name + ".weight", name + ".bias");
  };
  NodeDesc qkv = lin({"h"}, {"q", "k", "v"}, gguf ? L + "attn_qkv" : L + "attn.c_attn");
  qkv.split = {D, D, D};
  NodeDesc gelu = node(K::gelu, {"f"}, {"f"});
  gelu.gelu_tanh = true;
  d->embed = {node(K::embedding, {"tokens"}, {"x"}, gguf ? "token_embd.weight" : P + "wte.weight"),
              node(K::pos_embedding, {"x"}, {"x"}, gguf ? "position_embd.weight" : P + "wpe.weight")};
  d->block = {
      norm(gguf ? L + "attn_norm" : L + "ln_1"),
      qkv,
      node(K::attention, {"q", "k", "v"}, {"a"}),
      lin({"a"}, {"o"}, gguf ? L + "attn_output" : L + "attn.c_proj"),
      node(K::add, {"x", "o"}, {"x"}),
      norm(gguf ? L + "ffn_norm" : L + "ln_2"),
      lin({"h"}, {"f"}, gguf ? L + "ffn_up" : L + "mlp.c_fc"),
      gelu,
      lin({"f"}, {"o"}, gguf ? L + "ffn_down" : L + "mlp.c_proj"),
      node(K::add, {"x", "o"}, {"x"}),
  };
  const std::string classifier = gguf ? (c.tied ? "token_embd.weight" : "output.weight")
                                      : (c.tied ? P + "wte.weight" : "lm_head.weight");
  d->head = {norm(gguf ? "output_norm" : P + "ln_f"), node(K::logits, {"h"}, {"logits"}, classifier)};
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> kArchs = {"gpt2", "llama", "mistral", "qwen2", "qwen3"};
  return kArchs;
}

std::string supported_list() {
  std::string s;
  for (const std::string& a : supported_architectures()) s += (s.empty() ? "" : ", ") + a;
  return s;
}

Status describe(const ArchConfig& c, Naming naming, const std::string& source, graph::ModelDesc* d) {
  d->settings = c.settings;
  d->path = source;
  if (c.arch == "llama" || c.arch == "mistral" || c.arch == "qwen2" || c.arch == "qwen3") {
    describe_llama(c, naming, d);
  } else if (c.arch == "gpt2") {
    if (c.settings.head_dim * c.settings.n_heads != c.settings.d_model)
      return format_error(source + ": gpt2 needs head_dim × n_heads == d_model");
    describe_gpt2(c, naming, d);
  } else {
    return unsupported(source + ": architecture '" + c.arch + "' is not supported (supported: " +
                       supported_list() + ")");
  }
  name_nodes(d);
  return Status::Ok();
}

bool ignorable_tensor(const ArchConfig& c, Naming naming, const std::string& name) {
  auto ends = [&](const std::string& suf) {
    return name.size() >= suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (c.arch == "gpt2" && naming == Naming::hf) return ends(".attn.bias") || ends(".attn.masked_bias");
  // Checkpoints that tie the classifier sometimes still store it.
  if (c.tied && naming == Naming::hf) return name == "lm_head.weight";
  // llama.cpp's Llama 3 rope_freqs tensor is read into Settings::rope_freq_factors.
  if (naming == Naming::gguf) return name == "rope_freqs.weight";
  return false;
}

}  // namespace headwise::formats
