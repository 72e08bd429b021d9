#include "runtime/session_buffers.hpp"

#include <cstdlib>

#include "runtime/huge_pages.hpp"

namespace headwise {

AlignedFloats::~AlignedFloats() { std::free(p_); }

bool AlignedFloats::resize(size_t n) {
  if (n <= n_) return true;
  std::free(p_);
  p_ = static_cast<float*>(alloc_maybe_huge(n * sizeof(float)));
  n_ = p_ ? n : 0;
  return p_ != nullptr;
}

Status SessionBuffers::create(const graph::Plan& plan, int max_context, int max_chunk,
                              bool all_logits, KvType kv_type, int threads,
                              std::unique_ptr<SessionBuffers>* out) {
  auto b = std::make_unique<SessionBuffers>();
  const graph::Graph& g = plan.graph;
  b->max_context = max_context;
  b->kv_type = kv_type;
  b->kv_bytes = size_t(g.kv_slots) * 2 * max_context * plan.kv_width() * kv_type_bytes(kv_type);
  const size_t kv_alloc = size_t(g.kv_slots) * 2 * b->kv_positions() * plan.kv_width() * kv_type_bytes(kv_type);
  const size_t kv = (kv_alloc + sizeof(float) - 1) / sizeof(float);  // in floats
  const size_t arena = size_t(g.arena_cols) * max_chunk;
  const size_t logits = size_t(all_logits ? max_chunk : 1) * g.settings.vocab_size;
  if (!b->kv.resize(kv) || !b->arena.resize(arena) || !b->logits.resize(logits) ||
      !b->linear_scratch_for(plan, max_chunk, graph::resolve_threads(threads)))
    return out_of_memory(
                  "out of memory opening a session: KV cache " + std::to_string(kv * 4 >> 20) +
                      " MiB, activations " + std::to_string(arena * 4 >> 20) + " MiB");
  b->pos.resize(max_chunk);
  b->balance.resize(plan.graph.nodes.size());
  *out = std::move(b);
  return Status::Ok();
}

}  // namespace headwise
