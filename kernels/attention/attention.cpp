// The attention kernel list (attention.inc) and the threading around a kernel: splits the
// work over OpenMP threads and merges split-KV partial states. ISA-agnostic.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>

#include "kernels/attention/attention.hpp"

namespace headwise::kernels {

// An amx line packs K and V with <prefill>_pack (attn_fwd_amx.cpp); a vec line has none.
#define HW_ATTN_PACK_DECL_vec(prefill)
#define HW_ATTN_PACK_DECL_amx(prefill) void prefill##_pack(const AttnProblem&, int, int, int, uint16_t*);
#define HW_ATTN_PACK_vec(prefill) nullptr
#define HW_ATTN_PACK_amx(prefill) prefill##_pack
#define HW_ATTN_KERNEL(isa, unit, kv, prefill, decode, qt, kt)                          \
  void prefill(const AttnProblem&, int, int, int, float*, const AttnPackedKv*);        \
  void decode(const AttnProblem&, int, int, int, float*, float*, AttnAhead);           \
  HW_ATTN_PACK_DECL_##unit(prefill)
#include "kernels/attention/attention.inc"
#undef HW_ATTN_KERNEL

namespace {
const AttnKernel kTable[] = {
#define HW_ATTN_KERNEL(isa, unit, kv, prefill, decode, qt, kt) \
  {Isa::isa, AttnUnit::unit, KvType::kv, #prefill, prefill, decode, HW_ATTN_PACK_##unit(prefill), qt, kt},
#include "kernels/attention/attention.inc"
#undef HW_ATTN_KERNEL
};

// Each thread's scratch and each decode task's partial states are written by one thread
// and lie kApartFloats (4 KiB) or more from those of another: when they touched,
// the hardware prefetchers of one core pulled in the lines the other core was writing,
// and the two bounced between the cores. Measured (llama-1b-like's 32/8 heads × 64, f16,
// 528 keys in L2, 2 threads, half the keys each): 45-48 µs per call with the regions
// adjacent, 25-35 µs apart, against 51-55 µs for one thread on all the keys.
constexpr size_t kApartFloats = 1024;
size_t apart(size_t n) { return (n + kApartFloats - 1) / kApartFloats * kApartFloats + kApartFloats; }
// One decode task's partial states: rows × decode_part_floats(D), kept apart.
size_t task_part_floats(int rows, int head_dim) { return apart(size_t(rows) * decode_part_floats(head_dim)); }
int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Minimum keys per decode chunk: below this, merging partials costs more than the
// extra parallelism gains.
constexpr int kMinChunkKeys = 64;
// Decode chunks start at multiples of this many keys: the kernels' vector width (their
// key groups), so every chunk but the last is read by the vector path only.
constexpr int kChunkGrain = 16;
// Upper bound on chunks per (batch, kv head), so the merge keeps its weights on the stack.
constexpr int kMaxChunks = 64;

// At most this much packed K/V per call (AttnPackedKv), over every (sequence, kv head):
// 8192 keys of 8 f16 kv heads × 128 (Llama-3-8B's), twice what the layer's cache holds
// for them (bf16 hi and lo). Keys past it are converted per query tile, as without.
constexpr size_t kMaxPackedBytes = size_t(64) << 20;

// -1: pack where the plan finds it pays; 0: never (set_attn_pack_override).
std::atomic<int> g_pack_override{-1};
}  // namespace

void set_attn_pack_override(bool on) { g_pack_override.store(on ? -1 : 0, std::memory_order_relaxed); }

namespace {
// -1: detect (cpu_attn_ahead); 0: l1; 1: l2 (set_attn_ahead_override).
std::atomic<int> g_ahead_override{-1};
}  // namespace

AttnAhead cpu_attn_ahead() {
  static const AttnAhead detected = [] {
    unsigned family = 0, model = 0;
    return amd_family_model(&family, &model) && family == 0x19 ? AttnAhead::l2 : AttnAhead::l1;
  }();
  const int o = g_ahead_override.load(std::memory_order_relaxed);
  return o < 0 ? detected : o == 0 ? AttnAhead::l1 : AttnAhead::l2;
}

void set_attn_ahead_override(int v) { g_ahead_override.store(v < 0 ? -1 : v != 0, std::memory_order_relaxed); }

const char* attn_ahead_name(AttnAhead a) { return a == AttnAhead::l2 ? "l2" : "l1"; }

KernelList<AttnKernel> attn_kernels() { return kernel_list(kTable); }

const AttnKernel& attn_kernel(Isa isa, KvType kv_type) {
  const AttnKernel* k =
      select(attn_kernels(), isa, [kv_type](const AttnKernel& e) {
        return e.kv_type == kv_type && (e.unit == AttnUnit::vec || amx_usable());
      });
  assert(k);  // attention.inc has a scalar line for every KvType
  return k ? *k : kTable[sizeof(kTable) / sizeof(kTable[0]) - 1];
}

AttnPlan plan_attention(const AttnKernel& k, const AttnProblem& p, int threads,
                        AttnPath force) {
  AttnPlan plan;
  if (threads <= 0) threads = omp_get_max_threads();
  if (omp_in_parallel()) threads = 1;  // never nest parallel regions
  // Decode path when the queries would fill at most a quarter of a prefill tile.
  const bool decode = force == AttnPath::decode ||
                      (force == AttnPath::automatic && p.q_len * 4 <= k.q_tile);
  if (!decode) {
    const int tasks = p.batch * p.q_heads * ceil_div(p.q_len, k.q_tile);
    plan.path = AttnPath::prefill;
    plan.threads = std::max(1, std::min(threads, tasks));
    plan.scratch_floats = apart(k.unit == AttnUnit::amx
                                    ? amx_prefill_scratch_floats(k.q_tile, k.kv_tile, p.head_dim)
                                    : prefill_scratch_floats(k.q_tile, k.kv_tile, p.head_dim, k.kv_type));
    // Pack K and V once where more than one query tile reads each key tile (the query
    // tiles of a head, and the heads of a GQA group); one reader gains nothing.
    const int readers = ceil_div(p.q_len, k.q_tile) * p.group();
    if (k.pack && readers > 1 && g_pack_override.load(std::memory_order_relaxed) != 0) {
      const size_t tile = amx_packed_tile_floats(k.kv_tile, p.head_dim, k.kv_type);
      const size_t heads = size_t(p.batch) * p.kv_heads;
      const size_t cap = kMaxPackedBytes / sizeof(float) / (tile * heads);
      const int tiles = int(std::min<size_t>(ceil_div(p.kv_len, k.kv_tile), cap));
      plan.packed_keys = tiles * k.kv_tile;
      plan.packed_floats = tiles > 0 ? apart(tiles * heads * tile) : 0;
    }
    return plan;
  }
  plan.path = AttnPath::decode;
  // One chunk of keys per thread (whole kChunkGrain groups, as equal as that allows),
  // of at least kMinChunkKeys. Four tasks per thread rounded to the 64-key tile left 2
  // threads at 528 keys five tasks of 128, 128, 128, 128 and 16 keys, one thread idle
  // for a task's time: cold-cache harness (48 caches in turn, 2 threads, f16),
  // llama-134m's 12 × 64 heads at 544 keys 58-59 -> 47 µs per layer.
  int chunks = std::max(1, ceil_div(threads, p.batch));
  chunks = std::min({chunks, std::max(1, p.kv_len / kMinChunkKeys), kMaxChunks});
  plan.kv_chunks = chunks;
  plan.ahead = cpu_attn_ahead();
  plan.threads = std::max(1, std::min(threads, p.batch * chunks));
  const int rows = p.q_len * p.q_heads;
  plan.scratch_floats = apart(decode_scratch_floats(k.kv_tile, rows, p.head_dim));
  plan.partial_floats = size_t(p.batch) * chunks * task_part_floats(rows, p.head_dim);
  return plan;
}

namespace {

void run_prefill(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan,
                 float* ws) {
  const int nqb = ceil_div(p.q_len, k.q_tile);
  const int bh = p.batch * p.q_heads;
  const int tasks = bh * nqb;
  uint16_t* pdata = reinterpret_cast<uint16_t*>(ws + plan.scratch_floats * plan.threads + plan.partial_floats);
  AttnPackedKv packed;
  if (plan.packed_keys > 0) {
    packed.data = pdata;
    packed.keys = plan.packed_keys;
    packed.tile_keys = k.kv_tile;
    packed.kv_heads = p.kv_heads;
    packed.tile_u16 = 2 * amx_packed_tile_floats(k.kv_tile, p.head_dim, k.kv_type);
  }
  const int ptiles = plan.packed_keys / k.kv_tile;
  const int ptasks = p.batch * p.kv_heads * ptiles;
#pragma omp parallel num_threads(plan.threads)
  {
    float* scratch = ws + plan.scratch_floats * omp_get_thread_num();
    if (ptasks > 0) {
      // (The loop's implicit barrier: every tile is packed before a query tile reads it.)
#pragma omp for schedule(static)
      for (int i = 0; i < ptasks; ++i) {
        const int b = i / (p.kv_heads * ptiles), hk = i / ptiles % p.kv_heads, t = i % ptiles;
        if (t * k.kv_tile < p.kv_end(b))  // (a padded sequence's missing keys: never read)
          k.pack(p, b, hk, t * k.kv_tile, pdata + packed.offset(b, hk, t));
      }
    }
    // Causal tiles further down the sequence see more keys: hand them out first, so the
    // dynamic schedule ends with the cheap tiles and threads finish together.
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < tasks; ++t) {
      const int qb = p.causal ? nqb - 1 - t / bh : t / bh;
      const int b = (t % bh) / p.q_heads, h = (t % bh) % p.q_heads;
      k.prefill(p, b, h, qb * k.q_tile, scratch, packed.keys > 0 ? &packed : nullptr);
    }
  }
}

void run_decode(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan, float* ws) {
  if (plan.threads <= 1) {  // no region (e.g. one sequence of a batch, on a thread of its own)
    run_decode_tasks(k, p, plan, ws, 0, 1);
    run_decode_merge(p, plan, ws, 0, 1);
    return;
  }
#pragma omp parallel num_threads(plan.threads)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    run_decode_tasks(k, p, plan, ws, t, n);
#pragma omp barrier
    run_decode_merge(p, plan, ws, t, n);
  }
}

}  // namespace

void run_decode_tasks(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan, float* ws, int t, int n) {
  const int chunks = plan.kv_chunks;
  const int rows = p.q_len * p.q_heads;
  const int chunk_len = ceil_div(ceil_div(p.kv_len, chunks), kChunkGrain) * kChunkGrain;
  const size_t task = task_part_floats(rows, p.head_dim);
  float* parts = ws + plan.scratch_floats * plan.threads;  // (batch, chunks) tasks of (rows, P)
  float* scratch = ws + plan.scratch_floats * t;
  const int tasks = p.batch * chunks;
  // Thread t: tasks [tasks·t/n, tasks·(t+1)/n) (one chunk each when tasks == n).
  for (int i = int(int64_t(tasks) * t / n); i < int(int64_t(tasks) * (t + 1) / n); ++i) {
    const int b = i / chunks, c = i % chunks;
    const int k0 = std::min(p.kv_len, c * chunk_len);
    const int k1 = std::min(p.kv_len, k0 + chunk_len);
    k.decode(p, b, k0, k1, parts + i * task, scratch, plan.ahead);
  }
}

void run_decode_merge(const AttnProblem& p, const AttnPlan& plan, float* ws, int t, int n) {
  // Merge chunk partials per (batch, row):
  //   M = max_c m_c;  L = Σ_c l_c·2^(m_c − M);  O = Σ_c acc_c·2^(m_c − M) / L
  const int chunks = plan.kv_chunks;
  const int rows = p.q_len * p.q_heads;
  const int64_t P = decode_part_floats(p.head_dim);
  const size_t task = task_part_floats(rows, p.head_dim);
  const float* parts = ws + plan.scratch_floats * plan.threads;
  const int all = p.batch * rows;
  for (int i = int(int64_t(all) * t / n); i < int(int64_t(all) * (t + 1) / n); ++i) {
    const int b = i / rows, r = i % rows;
    const float* first = parts + size_t(b) * chunks * task + r * P;
    const size_t cstride = task;
    float M = -INFINITY;
    for (int c = 0; c < chunks; ++c) M = std::max(M, first[c * cstride]);
    float* o = p.o.at(b, r / p.q_heads, r % p.q_heads);
    if (M == -INFINITY) {  // no visible key at all: zeros, never 0/0
      std::fill(o, o + p.head_dim, 0.0f);
      continue;
    }
    float w[kMaxChunks];  // 2^(m_c − M), 0 for a chunk that saw nothing
    float L = 0.0f;
    for (int c = 0; c < chunks; ++c) {
      const float* pc = first + c * cstride;
      w[c] = pc[0] == -INFINITY ? 0.0f : std::exp2(pc[0] - M);
      L += pc[1] * w[c];
    }
    // Chunk outer, features inner: the inner loop is contiguous and vectorizes.
    const float inv = 1.0f / L;
    std::fill(o, o + p.head_dim, 0.0f);
    for (int c = 0; c < chunks; ++c) {
      const float* a = first + c * cstride + kPartAcc;
      const float wc = w[c] * inv;
      for (int d = 0; d < p.head_dim; ++d) o[d] += a[d] * wc;
    }
  }
}

void run_attention(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan,
                   float* workspace) {
  assert(p.q_heads % p.kv_heads == 0 && p.head_dim >= 1 && p.head_dim <= kMaxHeadDim);
  assert(!p.causal || p.q_len <= p.kv_len);
  assert(k.kv_type == p.kv_type);
  if (p.batch == 0 || p.q_len == 0) return;
  if (plan.path == AttnPath::decode) run_decode(k, p, plan, workspace);
  else run_prefill(k, p, plan, workspace);
}

}  // namespace headwise::kernels
