// The two Transformer families as descriptions — Llama (RMSNorm, RoPE, SwiGLU, GQA)
// and GPT-2 (LayerNorm, learned positions, GELU, biases, fused QKV in HF's [in][out]
// layout) — with the tensors each needs. Used by the llama2.c importer, by the
// synthetic models of `headwise bench`, and as worked examples of graph/FORMAT.md.
// They are data: no code path depends on the family.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/description.hpp"
#include "graph/weights.hpp"

namespace headwise::graph {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t fan_in = 1;  // for scaling random weights; 0 marks a norm gain (ones)
  bool bias = false;   // zero-mean small values
};

struct Preset {
  ModelDesc desc;
  std::vector<TensorSpec> tensors;
};

// Meta Llama tensor names (tok_embeddings.weight, layers.{l}.attention.wq.weight, ...),
// the names llama2.c checkpoints are exposed under. `tied`: the classifier reuses the
// token embedding.
Preset llama_preset(const Settings& s, int hidden_dim, bool tied, const std::string& name);

// The settings of a llama2.c checkpoint: its header, plus the constants llama2.c's
// forward pass hard-codes (RMSNorm ε 1e-5, RoPE base 10000 on interleaved pairs).
Settings llama2c_settings(const Llama2cConfig& c);

// Hugging Face GPT-2 tensor names (wte.weight, h.{l}.attn.c_attn.weight, ...); the
// classifier is tied to wte; head_dim = d_model / n_heads; hidden = 4·d_model.
Preset gpt2_preset(const Settings& s, const std::string& name);

}  // namespace headwise::graph
