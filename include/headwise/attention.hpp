// Multi-head attention, the heart of headwise:
//   O[b, i, h] = softmax(Q[b, i, h] · K[b, :, h / g]ᵀ · scale + mask) · V[b, :, h / g]
// for h < q_heads, with g = q_heads / kv_heads query heads per kv head (MHA when
// g = 1, GQA when 1 < g < q_heads, MQA when kv_heads = 1).
#pragma once

#include <cstdint>

#include "headwise/kv_type.hpp"
#include "headwise/limits.hpp"
#include "headwise/status.hpp"

namespace headwise {

// A [batch][positions][heads][head_dim] tensor given by its base pointer and element
// strides for batch, position and head; head_dim is contiguous. Q, K and V may be
// slices of one fused QKV buffer or of a KV cache.
struct AttnInput {
  const float* data = nullptr;
  int64_t batch_stride = 0, pos_stride = 0, head_stride = 0;
};
struct AttnOutput {
  float* data = nullptr;
  int64_t batch_stride = 0, pos_stride = 0, head_stride = 0;
};

// Positions per tile of a tiled K/V input (AttnKvInput::tile_stride).
constexpr int kKvTileRows = 16;

// K or V stored as AttentionParams::kv_type elements (float for f32, uint16_t bit
// patterns for f16 and bf16; see kv_type.hpp), e.g. a session's 16-bit KV cache.
// Plain (tile_stride 0): position t at t·pos_stride. Tiled (tile_stride > 0, a 16-bit
// kv_type only, K and V both): positions come in tiles of kKvTileRows, position t at
// (t / kKvTileRows)·tile_stride + (t % kKvTileRows)·pos_stride — the layout of a
// session's 16-bit cache, where each tile holds every head's 16 K rows (head-major,
// head_stride = 16·pos_stride) and then their 16 V rows, so decode reads it front to
// back. All strides count elements.
struct AttnKvInput {
  const void* data = nullptr;
  int64_t batch_stride = 0, pos_stride = 0, head_stride = 0;
  int64_t tile_stride = 0;
  AttnKvInput() = default;
  AttnKvInput(const void* d, int64_t b, int64_t p, int64_t h, int64_t tile = 0)
      : data(d), batch_stride(b), pos_stride(p), head_stride(h), tile_stride(tile) {}
  AttnKvInput(const AttnInput& f)  // NOLINT: an fp32 tensor is a K/V input of type f32
      : data(f.data), batch_stride(f.batch_stride), pos_stride(f.pos_stride),
        head_stride(f.head_stride) {}
};

// Strides of a densely packed [batch][positions][heads][head_dim] tensor.
inline AttnInput packed_input(const float* p, int positions, int heads, int head_dim) {
  return {p, int64_t(positions) * heads * head_dim, int64_t(heads) * head_dim, head_dim};
}
inline AttnOutput packed_output(float* p, int positions, int heads, int head_dim) {
  return {p, int64_t(positions) * heads * head_dim, int64_t(heads) * head_dim, head_dim};
}

struct AttentionParams {
  int batch = 1;
  int q_len = 0;     // Tq: queries per sequence
  int kv_len = 0;    // Tk: keys per sequence
  int q_heads = 0;   // Hq
  int kv_heads = 0;  // Hkv; Hq % Hkv == 0
  int head_dim = 0;  // 1 .. 256
  // Causal: query i sits at key position kv_len − q_len + i and sees the keys at or
  // before it (prefill when q_len == kv_len; decode and chunked prefill when less).
  bool causal = true;
  // 0 means the default 1/√head_dim (never 1/√d_model).
  float scale = 0.0f;
  // Optional (batch,) valid key counts for padded batches: keys at or past
  // kv_valid[b] are masked. A query that sees no key gets zeros, never NaN.
  const int32_t* kv_valid = nullptr;
  // OpenMP threads for this call; 0 = omp_get_max_threads(). Inside an OpenMP parallel
  // region the call runs on the calling thread only (no nested parallelism).
  int threads = 0;
  // Element type of K and V (f32, or a 16-bit cache widened in registers). Q, O and all
  // arithmetic are fp32 whatever it is.
  KvType kv_type = KvType::f32;
};

// The fused kernel of the active ISA (see isa_name()), chosen at each call. Errors:
// null pointers, non-positive sizes, q_heads % kv_heads != 0, head_dim outside 1..256,
// q_len > kv_len with causal, a kv_valid entry outside 0..kv_len, an unusable
// HEADWISE_ISA.
Status attention(const AttentionParams& params, AttnInput q, AttnKvInput k, AttnKvInput v,
                 AttnOutput out);

// The float64 reference implementation (materialised scores, full softmax): slow,
// obviously correct, the oracle the fused kernels are tested against.
// With a 16-bit kv_type it widens the stored elements exactly, so it computes on the
// same rounded K/V as the kernels.
Status attention_reference(const AttentionParams& params, AttnInput q, AttnKvInput k,
                           AttnKvInput v, AttnOutput out);

// The ISA attention() and models loaded from now on run on: "avx512", "avx2" or
// "scalar" (the best this CPU has, capped by HEADWISE_ISA). A loaded model keeps the ISA
// its plan was built with.
const char* isa_name();

}  // namespace headwise
