// The flat table of operations a model description may use (ggml-style: one enum,
// one name table, one switch in the executor). Adding an op: a line in HW_OPS, its
// shape rule in graph/shapes.cpp and its case in runtime/executor.cpp; -Wswitch
// flags every switch that forgot it.
#pragma once

#include <cstddef>
#include <string>

namespace headwise::graph {

// X(enum name, JSON name, number of inputs)
#define HW_OPS(X)                                                                 \
  X(embedding, "embedding", 1)         /* tokens → rows of the weight table */    \
  X(pos_embedding, "pos_embedding", 1) /* x + learned position rows */            \
  X(rmsnorm, "rmsnorm", 1)                                                        \
  X(head_rmsnorm, "head_rmsnorm", 1)   /* rmsnorm of each head_dim slice (Qwen3) */ \
  X(layernorm, "layernorm", 1)                                                    \
  X(linear, "linear", 1)               /* x·Wᵀ (+ b), one or several outputs */   \
  X(rope, "rope", 1)                   /* rotary embedding, in place */           \
  X(attention, "attention", 3)         /* q, k, v → softmax(q·kᵀ·s + mask)·v */  \
  X(add, "add", 2)                                                                \
  X(mul, "mul", 2)                                                                \
  X(silu, "silu", 1)                                                              \
  X(gelu, "gelu", 1)                   /* "approximate": "tanh" | "none" */       \
  X(swiglu, "swiglu", 2)               /* silu(a) ⊙ b */                          \
  X(logits, "logits", 1)               /* the classifier: x·Wᵀ for chosen rows */

enum class OpKind {
#define HW_OP_ENUM(e, name, nin) e,
  HW_OPS(HW_OP_ENUM)
#undef HW_OP_ENUM
      Count
};

struct OpInfo {
  const char* name;
  int inputs;
};

inline constexpr OpInfo kOpInfo[] = {
#define HW_OP_INFO(e, name, nin) {name, nin},
    HW_OPS(HW_OP_INFO)
#undef HW_OP_INFO
};
static_assert(sizeof(kOpInfo) / sizeof(kOpInfo[0]) == static_cast<size_t>(OpKind::Count),
              "one OpInfo per OpKind");

inline const char* op_name(OpKind k) { return kOpInfo[static_cast<int>(k)].name; }
inline int op_inputs(OpKind k) { return kOpInfo[static_cast<int>(k)].inputs; }

// Looks up a JSON op name; false when unknown.
bool parse_op(const std::string& name, OpKind* out);

}  // namespace headwise::graph
