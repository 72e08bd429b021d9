// Multi-head attention kernels: O = softmax(Q·Kᵀ·scale + mask)·V per head.
//
// Pure compute: pointers, shapes and strides in, no allocation, no exceptions, no
// graph knowledge. Preconditions are asserted; the public API (runtime/) validates
// arguments and reports errors before calling here.
//
// Layout of every tensor: element (b, t, h, d) lives at
//   base + b·stride_b + t·stride_t + h·stride_h + d
// i.e. any strides for batch, position and head, head_dim contiguous. Q, K and V can
// therefore be slices of one fused QKV buffer or of a KV cache, with no copies.
// K and V hold elements of the problem's kv_type (fp32, f16 or bf16; see
// headwise/kv_type.hpp); the kernels widen 16-bit elements to fp32 in registers, and all
// arithmetic is fp32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headwise/kv_type.hpp"
#include "kernels/registry.hpp"

namespace headwise::kernels {

// The largest head_dim the kernels accept, stated once (the graph and the public API
// check against it). Why 256: it is the largest head_dim of the models headwise targets
// (Gemma's 256; Llama/Mistral/Qwen use 64..128), the tests sweep 1..256, and the
// per-thread prefill scratch, (2·head_dim + kv_tile + 2)·q_tile floats (148 KiB at 256
// on AVX-512), stays within a core's L2. Nothing in the bodies breaks above it; raising it
// means re-running the sweep and the benchmarks there.
constexpr int kMaxHeadDim = 256;

struct Strided {
  const float* data = nullptr;
  int64_t sb = 0, st = 0, sh = 0;  // element strides: batch, position, head
  const float* at(int b, int t, int h) const { return data + b * sb + t * st + h * sh; }
};

// Positions per tile of a tiled K/V layout (StridedKv::stile): a multiple of every
// kernel's vector width and of the decode chunk grain, so the kernels' groups of keys
// never straddle two tiles.
constexpr int kKvTileRows = 16;

// K or V: elements of AttnProblem::kv_type (float or uint16_t), strides in elements.
// Plain (stile == 0): position t at t·st. Tiled (stile > 0): positions come in tiles of
// kKvTileRows, t at (t / kKvTileRows)·stile + (t % kKvTileRows)·st — the session's
// 16-bit cache, where each tile holds every head's 16 K rows (head-major) and then their
// V rows, so decode reads the cache front to back (see runtime/session_buffers.hpp).
// Within a tile, and for any t when plain, row t + i is i·st past row t.
struct StridedKv {
  const void* data = nullptr;
  int64_t sb = 0, st = 0, sh = 0;
  int64_t stile = 0;
  // Elements from data to (b, t, h).
  int64_t offset(int b, int t, int h) const {
    const int64_t pos = stile ? (t / kKvTileRows) * stile + (t % kKvTileRows) * st : t * st;
    return b * sb + pos + h * sh;
  }
  template <class T>
  const T* at(int b, int t, int h) const {
    return static_cast<const T*>(data) + offset(b, t, h);
  }
};

// Asks for rows [t, t + n) of kv head hk's K and V (into L2, one request a cache line):
// the prefill bodies call it one key tile ahead — a head's K and V exceed L2 for long
// sequences, and every query tile streams them again. (Row by row: a tiled 16-bit cache
// is not one stride apart across its tiles.) T: the K/V element type.
template <class T, class Problem>
inline void prefetch_kv_rows(const Problem& p, int b, int hk, int t, int n) {
  constexpr int kStep = 64 / sizeof(T);  // elements per cache line
  for (int j = 0; j < n; ++j) {
    const T* kn = p.k.template at<T>(b, t + j, hk);
    const T* vn = p.v.template at<T>(b, t + j, hk);
    for (int d = 0; d < p.head_dim; d += kStep) {
      __builtin_prefetch(kn + d, 0, 2);
      __builtin_prefetch(vn + d, 0, 2);
    }
  }
}

struct StridedOut {
  float* data = nullptr;
  int64_t sb = 0, st = 0, sh = 0;
  float* at(int b, int t, int h) const { return data + b * sb + t * st + h * sh; }
};

enum class AttnPath { automatic, prefill, decode };

struct AttnProblem {
  Strided q;        // q: (B, Tq, Hq, D)
  StridedKv k, v;   // k, v: (B, Tk, Hkv, D), elements of kv_type
  KvType kv_type = KvType::f32;
  StridedOut o;     // o: (B, Tq, Hq, D)
  int batch = 1, q_len = 0, kv_len = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = true;
  float scale = 0.0f;               // > 0 (the API turns "default" into 1/√head_dim)
  const int32_t* kv_valid = nullptr;  // (B,) keys at or past kv_valid[b] are masked; null: none
  // Causal: query i of a sequence sits at key position kv_len − q_len + i and sees keys
  // at positions ≤ that (prefill when q_len == kv_len; decode / chunked prefill when less).
  int causal_offset() const { return kv_len - q_len; }
  // Keys sequence b has: kv_len, or fewer where kv_valid says so.
  int kv_end(int b) const { return kv_valid && kv_valid[b] < kv_len ? kv_valid[b] : kv_len; }
  int group() const { return q_heads / kv_heads; }  // query heads per kv head (GQA/MQA)
};

// Query-key pairs one sequence's attention visits (causal: query i sees the keys up to
// position kv_len − q_len + i).
inline double attention_pairs(int q_len, int kv_len, bool causal) {
  const double tq = q_len;
  return causal ? tq * (kv_len - q_len) + tq * (tq + 1) / 2 : tq * kv_len;
}
// FLOPs of attention, 2 for Q·Kᵀ and 2 for P·V per pair, head and feature: the one count
// behind every table and benchmark (causal prefill 2·B·Hq·D·T·(T+1), decode 4·B·Hq·D·Tk,
// non-causal 4·B·Hq·D·Tq·Tk; bench/compare_torch.py states the same).
inline double attention_flops(int batch, int q_heads, int head_dim, int q_len, int kv_len, bool causal) {
  return 4.0 * batch * q_heads * head_dim * attention_pairs(q_len, kv_len, causal);
}

// ---- the kernel table -------------------------------------------------------------
// K and V converted once per call, before any query tile, by a line that packs them
// (AttnKernel::pack): every query tile of every query head of a kv head reads the same
// key tiles, so the amx lines' conversion of K and V to bf16 tiles (with P's, about a
// third of their time when each query tile converted its own) is paid once. Key tile t (keys t·kv_tile ..) of
// sequence b, kv head hk lies at tile(b, hk, t), for the keys below `keys`.
struct AttnPackedKv {
  const uint16_t* data = nullptr;
  int keys = 0;         // whole key tiles, from key 0
  int tile_keys = 1;    // the line's kv_tile
  int kv_heads = 0;
  size_t tile_u16 = 0;  // elements of one key tile (amx_packed_tile_floats() · 2)
  size_t offset(int b, int hk, int t) const {  // elements from data
    return ((size_t(b) * kv_heads + hk) * size_t(keys / tile_keys) + t) * tile_u16;
  }
  const uint16_t* tile(int b, int hk, int t) const { return data + offset(b, hk, t); }
};

// A prefill kernel computes one query tile (rows q0 .. q0+q_tile−1, clipped to q_len)
// of one query head, over all of its keys, into p.o. `scratch` holds
// prefill_scratch_floats() floats, 64-byte aligned, owned by the calling thread.
// `packed`: the call's packed K and V where its line packs them, else null (the vector
// lines never read it).
using AttnPrefillFn = void (*)(const AttnProblem& p, int b, int hq, int q0, float* scratch,
                               const AttnPackedKv* packed);
// A line's packing of one key tile (keys k0 .. k0 + kv_tile − 1 of sequence b, kv head
// hk, those that exist) into `tile`, amx_packed_tile_floats() floats.
using AttnPackFn = void (*)(const AttnProblem& p, int b, int hk, int k0, uint16_t* tile);

// Where a decode kernel asks for the keys ahead of those it reads (attn_decode_impl.hpp):
// a tiled 16-bit cache's next tile, row by row as it reads this one's, or a plain
// cache's rows kPrefetchAhead positions on; into L1 (prefetcht0) or into L2 only
// (prefetcht1). Which is faster depends on the core, not on the shape, and the results
// are the same bits either way; cpu_attn_ahead() says which for this CPU.
enum class AttnAhead : uint8_t { l1, l2 };
// l2 on AMD family 19h, l1 elsewhere. Measured (cold caches, `headwise bench attention
// --copies 48 --ahead l1|l2`, 2 threads, tiled f16 unless said, alternating rounds):
//   Zen 4 (EPYC 9004, 32 KiB L1D), 2026-12-08, l1 → l2 in every round: 12 × 64 heads
//   at 576 keys 88-103 → 65-78 µs (bf16 72-83 → 49-64; avx2 104-112 → 69-74; a plain
//   f32 cache, 24 copies, 186-192 → 126-146), at 2048 keys 280-327 → 232-257 (f32
//   631-656 → 471-484); 32/8 × 64 at 576 73-90 → 69-72 (f32 166-215 → 99-123); 32/8 ×
//   128 at 1040 228-234 → 148-150; 4 × 64 at 1024 42-55 → 27-34. Without any requests,
//   83-114 at the first shape: prefetcht0 gains nothing there. Two tiles ahead into L2:
//   no better (62-70 against 69-75). Zen 3 (19h as well) is assumed alike, not measured.
//   Zen 5 (1Ah, 48 KiB L1D), 2026-12-03: l1 cut the model's attention by a fifth or more
//   against no requests, and l2, or l1 two or four tiles ahead, was no better or slower
//   (attn_decode_impl.hpp); its plain cache was not measured with l2. Intel is not
//   measured: l1, as before this choice.
AttnAhead cpu_attn_ahead();
// Tests and benchmarks: 0 forces l1, 1 l2, -1 restores detection; applies to plans built
// afterwards.
void set_attn_ahead_override(int v);
const char* attn_ahead_name(AttnAhead a);

// A decode kernel computes, for every query row of sequence b (row r = t·q_heads + h
// for query position t and head h), the partial softmax state over keys [k0, k1):
// running max m (in log2 units), sum l and unnormalised accumulator acc[D].
// `part` receives rows × decode_part_floats(D) floats: per row m at [0], l at [1] and
// acc at [kPartAcc, kPartAcc + D), 64-byte aligned like the row itself.
// `ahead`: where it asks for the keys ahead (AttnAhead).
using AttnDecodeFn = void (*)(const AttnProblem& p, int b, int k0, int k1, float* part,
                              float* scratch, AttnAhead ahead);

// What a line computes on besides its ISA's vector registers (attention.inc's unit).
enum class AttnUnit { vec, amx };

struct AttnKernel {
  Isa isa;
  AttnUnit unit;   // amx: selected only where kernels::amx_usable()
  KvType kv_type;  // the K/V element type it reads
  const char* name;
  AttnPrefillFn prefill;
  AttnDecodeFn decode;
  AttnPackFn pack;  // amx lines: K and V once per call (AttnPackedKv); null: none
  int q_tile;   // query rows per prefill task
  int kv_tile;  // keys per inner tile (prefill) and per score block (decode)
};

// The list (attention.inc order) and its best kernel for an ISA and K/V element type
// (kernels/registry.hpp; every pair has one: the list has a scalar line per type).
KernelList<AttnKernel> attn_kernels();
const AttnKernel& attn_kernel(Isa isa, KvType kv_type = KvType::f32);

// The tiles attention.inc states for an ISA, at compile time: the per-ISA translation
// units instantiate their bodies with these, so the list is the only place they are
// written (and the tests sweep the edges of whatever it says).
struct AttnTiles {
  int q_tile, kv_tile;
};
constexpr AttnTiles attn_tiles(Isa isa, KvType kv_type = KvType::f32, AttnUnit unit = AttnUnit::vec) {
#define HW_ATTN_KERNEL(isa_, unit_, kv_, prefill, decode, qt, kt) \
  if (isa == Isa::isa_ && unit == AttnUnit::unit_ && kv_type == KvType::kv_) return {qt, kt};
#include "kernels/attention/attention.inc"
#undef HW_ATTN_KERNEL
  return {0, 0};
}

// Scratch each thread needs (floats). The kernel bodies lay scratch out the same way.
//   prefill: Qt (D, QT) | Ot (D, QT) | St (KT, QT) | m, l (QT each)
//            | 16-bit K/V only: Kt, Vt (KT, D) each, the current tile widened to fp32
//   decode:  Qs (R, Dp) | scores (R, KT), with R = q_len · q_heads and Dp = D rounded to 16
inline int decode_row_floats(int head_dim) { return (head_dim + 15) / 16 * 16; }
constexpr int kPartAcc = 16;
inline int decode_part_floats(int head_dim) { return kPartAcc + decode_row_floats(head_dim); }
inline size_t prefill_scratch_floats(int q_tile, int kv_tile, int head_dim,
                                     KvType kv_type = KvType::f32) {
  const size_t tiles = kv_type == KvType::f32 ? 0 : size_t(2) * kv_tile * head_dim;
  return size_t(2 * head_dim + kv_tile + 2) * q_tile + tiles;
}
// The amx lines' prefill scratch (attn_fwd_amx_impl.hpp lays it out), with D32 the
// head_dim rounded up to 32:
//   Qb: Q·scale·log2e as bf16 hi and lo B tiles (D32, QT) | Ot (D32, QT) | St (KT, QT)
//   | m, l (QT each) | Ka: the K tile as bf16 hi and lo A tiles (KT, D32)
//   | Va: Vᵀ as bf16 hi and lo A tiles (D32, KT) | Pb: P as bf16 hi and lo B tiles (KT, QT)
inline size_t amx_prefill_scratch_floats(int q_tile, int kv_tile, int head_dim) {
  const size_t d32 = (head_dim + 31) / 32 * 32;
  const size_t qt = q_tile, kt = kv_tile;
  return 2 * d32 * qt + 2 * kt * qt + 2 * qt + 2 * kt * d32;
}
// One packed key tile of an amx line (AttnPackedKv): K's and Vᵀ's A tiles as its scratch
// holds them (Ka, Va), hi and lo parts — hi alone for a bf16 cache, whose values are bf16.
inline size_t amx_packed_tile_floats(int kv_tile, int head_dim, KvType kv_type) {
  const size_t d32 = (head_dim + 31) / 32 * 32, parts = kv_type == KvType::bf16 ? 1 : 2;
  return parts * kv_tile * d32;
}
inline size_t decode_scratch_floats(int kv_tile, int rows, int head_dim) {
  return size_t(rows) * (decode_row_floats(head_dim) + kv_tile);
}

// ---- the driver --------------------------------------------------------------------
// Plans the work split for `threads` OpenMP threads (prefill: batch × heads × query
// tiles, heaviest causal tiles first, after the packing of K and V where the line packs
// them and more than one query tile reads each key tile; decode: batch × key chunks,
// every head of a sequence in one task, then a merge of the chunks' partial states).
struct AttnPlan {
  AttnPath path = AttnPath::prefill;
  int threads = 1;
  int kv_chunks = 1;            // decode: key chunks per sequence
  AttnAhead ahead = AttnAhead::l1;  // decode: where the keys ahead are asked for
  size_t scratch_floats = 0;    // per thread, with 4 KiB between threads (attention.cpp)
  size_t partial_floats = 0;    // decode partial states, all chunks
  int packed_keys = 0;          // prefill: keys packed once per call (AttnPackedKv), 0: none
  size_t packed_floats = 0;     // their tiles, every (sequence, kv head)
  size_t workspace_floats() const { return scratch_floats * threads + partial_floats + packed_floats; }
};

AttnPlan plan_attention(const AttnKernel& k, const AttnProblem& p, int threads,
                        AttnPath force = AttnPath::automatic);

// Tests and benchmarks: false plans no packing (every query tile converts its own key
// tiles, as a line without pack does); true restores the default. Applies to plans built
// afterwards; results are the same either way (tests/kernels/attention_pack_test.cpp).
void set_attn_pack_override(bool on);

// Runs the plan. `workspace` holds plan.workspace_floats() floats, 64-byte aligned.
void run_attention(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan,
                   float* workspace);

// The decode path's two phases, for a caller with threads of its own (graph::
// parallel_run): thread t of n runs its share of the key-chunk tasks, then — after every
// thread's tasks — its share of the merge. run_attention runs them in one OpenMP region
// with a barrier between. Shares depend on t and n only: the results do not depend on
// which threads run them.
void run_decode_tasks(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan, float* workspace,
                      int t, int n);
void run_decode_merge(const AttnProblem& p, const AttnPlan& plan, float* workspace, int t, int n);

// The float64 reference (materialised scores, full softmax): the oracle for tests.
void attention_reference(const AttnProblem& p);

}  // namespace headwise::kernels
