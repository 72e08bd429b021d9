// Attention made visible: the softmax weights of every head, recomputed explicitly in
// float64 from what an attention node saw (q after RoPE, the K cache), and head
// ablation (a head's output zeroed before W_o) scored by next-token loss.
//
// The fused kernels never materialise the T×T weights; this is a separate, slow path
// that only exists while a hook is installed on a session opened for it. Sessions
// opened without a hook run exactly as before (the executor tests one null pointer).
#pragma once

#include <cstdint>
#include <vector>

#include "headwise/model.hpp"

namespace headwise {

struct AttentionMaps {
  int tokens = 0;  // T
  // w[layer][head]: (T, T) row-major, row = query position, column = key position;
  // rows sum to 1, entries above the diagonal are exactly 0 (causal). Empty for a
  // layer or head that was not requested.
  std::vector<std::vector<std::vector<float>>> w;
  bool has(int layer, int head) const {
    return layer >= 0 && layer < int(w.size()) && head >= 0 && head < int(w[layer].size()) &&
           !w[layer][head].empty();
  }
  const float* map(int layer, int head) const { return w[layer][head].data(); }
};

struct MapsRequest {
  std::vector<int> layers;  // empty: every layer
  std::vector<int> heads;   // empty: every head
  int threads = 0;          // session threads (0: all cores)
};

// Prefills `tokens` (one pass, positions 0..T-1, in a fresh session) and fills `out`
// with the weights softmax(q·kᵀ·scale + causal mask) of the requested heads, computed
// in float64 per row and stored as float. Query head h reads kv head h / (heads /
// kv_heads) (GQA). Errors: an empty or too long token list, a layer or head out of
// range, a token outside the vocabulary.
Status attention_maps(const Model& model, const std::vector<int32_t>& tokens,
                      const MapsRequest& request, AttentionMaps* out);

// Mean next-token cross-entropy (natural log) of a prefill of `tokens`:
//   loss = 1/(T−1) · Σ_{i<T−1} [ logsumexp(logits_i) − logits_i[tokens[i+1]] ]
// computed in float64 from every position's logits, with `hook` (may be empty: no
// hook installed) on the session. T >= 2.
Status next_token_loss(const Model& model, const std::vector<int32_t>& tokens,
                       const AttentionHook& hook, int threads, double* loss);

// A hook that zeroes, in layer `layer`, the output columns head·head_dim ..
// (head+1)·head_dim of every row (head = -1: all heads of the layer), i.e. the head's
// contribution before W_o. Layers other than `layer` pass through untouched.
AttentionHook zero_head_hook(int layer, int head);

// next_token_loss with zero_head_hook(layer, head), after checking that the layer and
// head exist (head = -1: the whole layer).
Status ablated_loss(const Model& model, const std::vector<int32_t>& tokens, int layer, int head,
                    int threads, double* loss);

}  // namespace headwise
