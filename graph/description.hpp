// The model description: a Transformer written as data (graph/FORMAT.md). Parsing
// checks the JSON's form and every field's type and range; whether the ops fit
// together and match the weights is checked when the graph is built (graph.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/op.hpp"
#include "headwise/status.hpp"
#include "kernels/elementwise/elementwise.hpp"

namespace headwise::graph {

struct Settings {
  int vocab_size = 0, d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0,
      max_seq_len = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  kernels::RopeStyle rope_style = kernels::RopeStyle::interleaved;
  // Optional (head_dim/2) divisors of each pair's RoPE frequency: θ^(−2i/head_dim) / f[i]
  // (Llama 3 "llama3" rope scaling; llama.cpp's rope_freqs tensor). Empty: none.
  std::vector<float> rope_freq_factors;
};

enum class WeightLayout { out_in, in_out };  // [N][K] (y = W·x, PyTorch Linear) or [K][N]

struct NodeDesc {
  OpKind op = OpKind::Count;
  std::vector<std::string> in, out;
  std::string weight, bias;  // tensor names; "{layer}" is replaced by the layer index
  WeightLayout layout = WeightLayout::out_in;
  std::vector<int> split;    // linear with several outputs: their widths, in order
  float eps = -1.0f;         // norms: < 0 means settings.norm_eps
  bool causal = true;        // attention
  float scale = 0.0f;        // attention: 0 means 1/√head_dim
  bool gelu_tanh = true;     // gelu: "approximate": "tanh" (default) or "none" (erf)
  std::string where;         // "block[3] (linear)": for error messages
};

struct ModelDesc {
  std::string path;            // the JSON file
  std::string dir;             // its folder: relative file names resolve against it
  std::string name;
  std::string weights_file;    // resolved path of the safetensors file
  std::string tokenizer_file;  // resolved path, or empty
  Settings settings;
  std::vector<NodeDesc> embed, block, head;
};

// Limits of this build, checked while parsing (before anything is sized from them):
// the width of any activation (n_heads × head_dim, split widths), the nodes of the
// expanded graph (n_layers × block + embed + head) and the size of a description file.
constexpr int64_t kMaxFeatures = int64_t(1) << 20;
constexpr int64_t kMaxNodes = int64_t(1) << 16;
constexpr uint64_t kMaxDescriptionBytes = uint64_t(64) << 20;

// Parses description text; `path` is used for messages and to resolve relative files.
Status parse_description(const std::string& text, const std::string& path, ModelDesc* out);
Status load_description(const std::string& path, ModelDesc* out);

// Writes a description as JSON (what `headwise convert` emits). `weights_file` and
// `tokenizer_file` are written as given (relative names stay relative).
std::string description_to_json(const ModelDesc& desc, const std::string& weights_file,
                                 const std::string& tokenizer_file);

}  // namespace headwise::graph
