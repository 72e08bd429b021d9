// The supported architectures as model descriptions (graph/FORMAT.md): a checkpoint's
// configuration (GGUF `<arch>.*` keys or HF config.json) becomes an ArchConfig, and
// describe() writes the Transformer for it with the tensor names of the file format.
// Nothing downstream depends on the architecture: the graph, planner, executor, bench,
// maps and heads see a description like any other.
//
//   llama   (Llama 1/2/3, Mistral): RMSNorm, RoPE, SwiGLU, GQA; optional Llama 3
//           rope scaling (Settings::rope_freq_factors) and HF attention/MLP biases
//   qwen2:  llama + q/k/v biases
//   qwen3:  llama + per-head RMSNorm of q and k before RoPE (op head_rmsnorm)
//   gpt2:   LayerNorm, learned positions, fused QKV with bias, GELU (tanh)
#pragma once

#include <string>
#include <vector>

#include "graph/description.hpp"
#include "headwise/status.hpp"

namespace headwise::formats {

enum class Naming { gguf, hf };

struct ArchConfig {
  std::string arch;             // one of supported_architectures()
  graph::Settings settings;     // vocab, dims, heads, context, eps, rope
  int ffn_hidden = 0;           // feed-forward width
  bool tied = false;            // classifier = token embedding
  bool attn_bias = false;       // q/k/v biases (qwen2 always; llama with attention_bias)
  bool out_bias = false;        // o_proj bias (llama attention_bias)
  bool mlp_bias = false;        // gate/up/down biases (llama mlp_bias)
  std::string hf_prefix;        // HF GPT-2: "" or "transformer."
};

// "gpt2, llama, mistral, qwen2, qwen3" (mistral is llama's description).
const std::vector<std::string>& supported_architectures();
std::string supported_list();

// `source` names the file in messages (an unknown architecture, inconsistent sizes).
Status describe(const ArchConfig& c, Naming naming, const std::string& source, graph::ModelDesc* out);

// Tensor names a file may carry that no node reads and that loading drops: HF GPT-2's
// causal-mask buffers (h.N.attn.bias / .masked_bias), a stored lm_head.weight when the
// config ties it, GGUF's rope_freqs.weight (read into the settings instead).
bool ignorable_tensor(const ArchConfig& c, Naming naming, const std::string& name);

}  // namespace headwise::formats
