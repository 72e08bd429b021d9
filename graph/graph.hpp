// The model as an executable graph: the description expanded over its layers, every
// tensor name resolved to a value with a known width, every weight bound and checked
// against the shape the description implies, and a memory plan for the activations.
//
// All activations are 2-D: rows = the tokens of one step (a prompt chunk, or one token
// of each sequence in a batched decode), cols = features. Values therefore only carry
// their width; the row count is a property of the step.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "graph/description.hpp"
#include "graph/weights.hpp"
#include "headwise/status.hpp"

namespace headwise::graph {

// The weights a graph reads: a safetensors file or a llama2.c checkpoint, plus f32
// copies of any f16/bf16 tensors (converted once at load; f32 is used in place).
class WeightSet {
 public:
  static Status open_safetensors(const std::string& path, std::unique_ptr<WeightSet>* out);
  static Status open_llama2c(const std::string& path, std::unique_ptr<WeightSet>* out);
  // Tensors held in memory (synthetic models); `views` point into `data`.
  static std::unique_ptr<WeightSet> in_memory(std::vector<TensorView> views,
                                              std::deque<std::vector<float>> data,
                                              std::string label);
  // Tensors that live in memory owned by `owner` (mapped GGUF or safetensors files),
  // which the set keeps alive.
  static std::unique_ptr<WeightSet> external(std::vector<TensorView> views,
                                             std::shared_ptr<const void> owner, std::string label);

  const TensorView* find(const std::string& name) const;
  const std::vector<TensorView>& tensors() const;
  const std::string& path() const;
  const Llama2cCheckpoint* llama2c() const { return ckpt_.get(); }
  // f32 data of a tensor: in place when stored as f32, else a converted copy.
  const float* f32(const TensorView& t);

 private:
  std::unique_ptr<SafetensorsFile> st_;
  std::unique_ptr<Llama2cCheckpoint> ckpt_;
  std::deque<std::vector<float>> converted_;
  std::vector<TensorView> memory_views_;
  std::string memory_label_;
  std::shared_ptr<const void> owner_;
};

// One SSA value: each node output is a new value, even when it reuses a name.
struct Value {
  std::string name;
  int cols = 0;
  int producer = -1;      // node index; -1 for the graph input "tokens"
  int last_use = -1;      // last node index that reads it
  int group = -1;         // storage group (values sharing memory through in-place ops)
  int kv_slot = -1;       // ≥ 0: this value is the K (kv_part 0) or V (1) of attention
  int kv_part = 0;        //      node kv_slot and lives in that slot of the KV cache
};

struct Node {
  OpKind op = OpKind::Count;
  std::string where;      // "block[4] (linear), layer 2"
  int layer = -1;         // block layer, -1 in embed/head
  std::vector<int> in, out;
  // weights (f32, row-major as stored) and their names
  std::string weight_name, bias_name;
  const float* w = nullptr;
  const float* b = nullptr;
  // linear / logits with weights stored in another type (f16, bf16, the GGUF block
  // types), [N][K] rows as stored: multiplied in place (kernels/quant), w stays null.
  const void* wq = nullptr;
  DType wq_type = DType::f32;
  const int32_t* wq_perm = nullptr;  // K: wq's columns stored permuted (TensorView::perm)
  int64_t w_rows = 0, w_cols = 0;
  // linear / logits: y(M×N) = x(M×K) · Wᵀ, W stored [N][K] (out_in) or [K][N] (in_out)
  int K = 0, N = 0;
  WeightLayout layout = WeightLayout::out_in;
  std::vector<int> split;  // output widths for a multi-output linear
  // op parameters
  float eps = 0.0f;
  bool causal = true;
  float scale = 0.0f;
  bool gelu_tanh = true;
  int heads = 0, kv_heads = 0, head_dim = 0;  // rope (heads), attention (all three)
  int kv_slot = -1;                            // attention: its KV-cache slot
};

// A storage group: values that share one buffer (an op writing in place over an input
// that nothing reads afterwards). `offset` is in floats per row of the step: the group
// lives at arena + offset·rows with a row stride of `cols`.
struct Group {
  int cols = 0;
  int first = 0, last = 0;  // node index range over which it is live
  int64_t offset = -1;      // in the arena, in units of (rows × 1 float)
  int kv_slot = -1, kv_part = 0;
};

struct Graph {
  Settings settings;
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<Group> groups;
  int tokens = 0;     // the input value
  int logits = -1;    // the output value
  int kv_slots = 0;   // attention nodes (each owns a K and a V cache slot)
  int64_t arena_cols = 0;  // arena size per row of the step, in floats
  std::unique_ptr<WeightSet> weights;
};

// Expands, binds and checks `desc` against `weights`, then plans memory. Every error
// names the description file and the node ("block[4] (linear), layer 2") or the tensor.
Status build_graph(const ModelDesc& desc, std::unique_ptr<WeightSet> weights, Graph* out);

}  // namespace headwise::graph
