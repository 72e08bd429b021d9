// The small Llama-shaped settings the graph tests build descriptions from.
#pragma once

#include "graph/description.hpp"

namespace headwise::graph {

inline Settings small_settings() {
  Settings s;
  s.vocab_size = 32;
  s.d_model = 16;
  s.n_layers = 2;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 4;
  s.max_seq_len = 64;
  return s;
}

}  // namespace headwise::graph
