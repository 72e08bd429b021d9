// The memory a session owns, allocated when it opens: the KV cache (up to its context),
// the activation arena (the plan's memory plan × rows per pass), the logits, the
// projections' scratch (oneDNN scratchpad, staging) and the attention workspace. The
// last two grow only to what a step of the session's own size needs (rows per pass,
// threads), never with the number of distinct prompt lengths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/plan.hpp"
#include "headwise/kv_type.hpp"
#include "headwise/status.hpp"

namespace headwise {

// 64-byte aligned, uninitialised floats.
class AlignedFloats {
 public:
  AlignedFloats() = default;
  ~AlignedFloats();
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  bool resize(size_t n);  // false when out of memory
  float* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

struct SessionBuffers {
  AlignedFloats kv;      // (kv_slots, max_context, 2, kv_heads · head_dim) elements of
                         // kv_type: each position's K row, then its V row (16-bit types
                         // use half the floats); see k_slot
  AlignedFloats arena;   // (arena_cols · max_chunk): group g at offset_g · rows
  AlignedFloats logits;  // (max_chunk if all_logits else 1, vocab)
  std::vector<int32_t> pos;  // (max_chunk,) position of each row of a step
  AlignedFloats linear_scratch;  // plan.linear_scratch_bytes(rows per step)
  AlignedFloats attn_workspace;  // kernels::AttnPlan::workspace_floats() of the largest step
  std::vector<graph::ShareBalance> balance;  // (plan nodes,): how each node's shares split
  int max_context = 0;
  KvType kv_type = KvType::f32;
  size_t kv_bytes = 0;   // bytes of the cache in use

  // Scratch for the projections of a step of `rows` rows on `threads` threads (grows
  // when a batched decode has more rows than a prefill pass); null when out of memory.
  void* linear_scratch_for(const graph::Plan& plan, int rows, int threads) {
    const size_t floats = (plan.linear_scratch_bytes(rows, threads) + sizeof(float) - 1) / sizeof(float);
    return linear_scratch.resize(floats ? floats : 16) ? linear_scratch.data() : nullptr;
  }
  size_t linear_scratch_bytes() const { return linear_scratch.size() * sizeof(float); }
  float* attention_workspace(size_t floats) {
    return attn_workspace.resize(floats ? floats : 16) ? attn_workspace.data() : nullptr;
  }

  static Status create(const graph::Plan& plan, int max_context, int max_chunk,
                       bool all_logits, KvType kv_type, int threads, std::unique_ptr<SessionBuffers>* out);
  // K and V of a slot: position 0's K row and V row (kv_width elements of kv_type each);
  // position t's rows are t · kv_row_stride(plan) elements further on. The two alternate
  // position by position, so decode attention, which reads a block of positions' K rows
  // and then the same positions' V rows, reads one forward stream rather than two
  // regions max_context rows apart. Measured (`headwise bench FILE --by-layer`, f16 cache,
  // 512 + 128 tokens, 2 threads, the two layouts alternating): llama-134m Q4_0's decode
  // attention 31.9-32.7 → 27.8-28.9 ms per layer and 256 calls (3 rounds), BF16's
  // 38.0-39.7 → 34.8-34.9, llama-1b-like Q4_K_M's GQA 47.9-48.9 → 46.6-47.7 (2 rounds);
  // prefill and an f32 cache unchanged.
  char* k_slot(const graph::Plan& plan, int slot) const {
    return reinterpret_cast<char*>(kv.data()) +
           size_t(2 * slot) * max_context * plan.kv_width() * kv_type_bytes(kv_type);
  }
  char* v_slot(const graph::Plan& plan, int slot) const {
    return k_slot(plan, slot) + size_t(plan.kv_width()) * kv_type_bytes(kv_type);
  }
  static int64_t kv_row_stride(const graph::Plan& plan) { return 2 * int64_t(plan.kv_width()); }
};

}  // namespace headwise
