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
#include "kernels/attention/attention.hpp"
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
  AlignedFloats kv;      // (kv_slots, kv_positions(), 2, kv_heads · head_dim) elements
                         // of kv_type, laid out as kv_view says
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
  // The cache of one attention node (slot), in kv_type elements.
  //
  // fp32: position-major, each position's K row then its V row (kv_width elements each),
  // rows kv_row_stride(plan) apart: a single-sequence step's K and V projections write
  // into it in place (runtime/executor.cpp, at()), so it keeps their row layout.
  //
  // 16-bit: tiles of kernels::kKvTileRows positions, each tile every head's 16 K rows
  // (head-major: head h's rows adjacent), then the same for V. Decode attention reads a
  // tile's K head by head and then its V, so the whole cache is read front to back. It
  // was position-major as fp32 is: there, reading a block's K rows (every second 1.5 KiB
  // of llama-134m's cache) and then going back for its V rows ran at a third to half of
  // a sequential read, whatever was prefetched — the hardware prefetchers follow runs of
  // lines, not a stride with gaps (a read-only loop over both layouts and orders, and
  // `headwise bench` before and after: bench/README.md, "Session 18").
  struct KvView {
    char* k = nullptr;  // position 0, head 0 of K
    char* v = nullptr;  // position 0, head 0 of V
    kernels::StridedKv layout;  // the strides (position, head, tile) both share; data unset
    // Elements from k (or v) to position t, head h.
    int64_t offset(int t, int h) const { return layout.offset(0, t, h); }
    kernels::StridedKv k_strided() const { return with(k); }
    kernels::StridedKv v_strided() const { return with(v); }

   private:
    kernels::StridedKv with(const char* p) const {
      kernels::StridedKv s = layout;
      s.data = p;
      return s;
    }
  };
  // Positions allocated per slot: max_context, rounded up to whole tiles when 16-bit.
  int kv_positions() const {
    if (kv_type == KvType::f32) return max_context;
    return (max_context + kernels::kKvTileRows - 1) / kernels::kKvTileRows * kernels::kKvTileRows;
  }
  KvView kv_view(const graph::Plan& plan, int slot) const {
    const int64_t w = plan.kv_width(), eb = kv_type_bytes(kv_type);
    const int64_t D = plan.graph.settings.head_dim;
    KvView s;
    s.k = reinterpret_cast<char*>(kv.data()) + size_t(2 * slot) * kv_positions() * w * eb;
    if (kv_type == KvType::f32) {
      s.v = s.k + w * eb;
      s.layout.st = kv_row_stride(plan);
      s.layout.sh = D;
    } else {
      s.v = s.k + kernels::kKvTileRows * w * eb;
      s.layout.st = D;
      s.layout.sh = kernels::kKvTileRows * D;
      s.layout.stile = 2 * kernels::kKvTileRows * w;
    }
    return s;
  }
  static int64_t kv_row_stride(const graph::Plan& plan) { return 2 * int64_t(plan.kv_width()); }
};

}  // namespace headwise
