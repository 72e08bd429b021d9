#include "runtime/session_memory.hpp"

#include <cstdio>
#include <string>

#include "graph/memory.hpp"
#include "graph/plan.hpp"

namespace headwise {
using graph::available_memory_bytes;

namespace {

std::string mib(uint64_t bytes) { return graph::mib_str(bytes); }

}  // namespace

Status check_session_memory(const graph::Plan& plan, int max_context, int max_chunk,
                            bool all_logits, uint64_t limit) {
  const graph::Graph& g = plan.graph;
  bool overflow = false;
  auto mul = [&](uint64_t a, uint64_t b) {
    uint64_t r;
    overflow |= __builtin_mul_overflow(a, b, &r);
    return r;
  };
  const uint64_t kv_floats = mul(mul(mul(uint64_t(g.kv_slots), 2), uint64_t(max_context)), uint64_t(plan.kv_width()));
  const uint64_t kv = mul(kv_floats, sizeof(float));
  const uint64_t arena = mul(mul(uint64_t(g.arena_cols), uint64_t(max_chunk)), sizeof(float));
  const uint64_t logits = mul(mul(uint64_t(all_logits ? max_chunk : 1), uint64_t(g.settings.vocab_size)), sizeof(float));
  uint64_t total = 0;
  overflow |= __builtin_add_overflow(kv, arena, &total) || __builtin_add_overflow(total, logits, &total);
  const bool by_default = limit == 0;
  if (by_default) limit = available_memory_bytes();
  if (!overflow && total <= limit) return Status::Ok();
  return out_of_memory(
      "a session of " + std::to_string(max_context) + " positions needs a KV cache of " +
      std::to_string(g.kv_slots) + " layers × 2 × " + std::to_string(max_context) + " positions × " +
      std::to_string(plan.kv_width()) + " floats = " + (overflow ? std::string("more than 2^64 bytes") : mib(kv)) +
      " plus " + mib(arena) + " of activations (" + std::to_string(max_chunk) + " rows) and " + mib(logits) +
      " of logits, more than the " + mib(limit) +
      (by_default ? " of memory available (MemAvailable)" : " memory limit") +
      "; open it with a smaller max_context (the model's max_seq_len is " +
      std::to_string(g.settings.max_seq_len) + ")");
}

}  // namespace headwise
