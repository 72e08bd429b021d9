// The attention kernel list (attention.inc) and the threading around a kernel: splits the
// work over OpenMP threads and merges split-KV partial states. ISA-agnostic.
#include <omp.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/attention/attention.hpp"

namespace headwise::kernels {

#define HW_ATTN_KERNEL(isa, kv, prefill, decode, qt, kt)                                \
  void prefill(const AttnProblem&, int, int, int, float*);                             \
  void decode(const AttnProblem&, int, int, int, float*, float*);
#include "kernels/attention/attention.inc"
#undef HW_ATTN_KERNEL

namespace {
const AttnKernel kTable[] = {
#define HW_ATTN_KERNEL(isa, kv, prefill, decode, qt, kt) \
  {Isa::isa, KvType::kv, #prefill, prefill, decode, qt, kt},
#include "kernels/attention/attention.inc"
#undef HW_ATTN_KERNEL
};

size_t round16(size_t n) { return (n + 15) / 16 * 16; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Minimum keys per decode chunk: below this, merging partials costs more than the
// extra parallelism gains.
constexpr int kMinChunkKeys = 64;
// Upper bound on chunks per (batch, kv head), so the merge keeps its weights on the stack.
constexpr int kMaxChunks = 64;
}  // namespace

KernelList<AttnKernel> attn_kernels() { return kernel_list(kTable); }

const AttnKernel& attn_kernel(Isa isa, KvType kv_type) {
  const AttnKernel* k =
      select(attn_kernels(), isa, [kv_type](const AttnKernel& e) { return e.kv_type == kv_type; });
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
    plan.scratch_floats =
        round16(prefill_scratch_floats(k.q_tile, k.kv_tile, p.head_dim, k.kv_type));
    return plan;
  }
  plan.path = AttnPath::decode;
  // Split the keys so that there are about 4 tasks per thread (load balance), but keep
  // chunks of at least kMinChunkKeys.
  int chunks = std::max(1, ceil_div(4 * threads, p.batch));
  chunks = std::min({chunks, std::max(1, p.kv_len / kMinChunkKeys), kMaxChunks});
  plan.kv_chunks = chunks;
  plan.threads = std::max(1, std::min(threads, p.batch * chunks));
  const int rows = p.q_len * p.q_heads;
  plan.scratch_floats = round16(decode_scratch_floats(k.kv_tile, rows, p.head_dim));
  plan.partial_floats = size_t(p.batch) * chunks * rows * decode_part_floats(p.head_dim);
  return plan;
}

namespace {

void run_prefill(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan,
                 float* ws) {
  const int nqb = ceil_div(p.q_len, k.q_tile);
  const int bh = p.batch * p.q_heads;
  const int tasks = bh * nqb;
  // Causal tiles further down the sequence see more keys: hand them out first, so the
  // dynamic schedule ends with the cheap tiles and threads finish together.
#pragma omp parallel num_threads(plan.threads)
  {
    float* scratch = ws + plan.scratch_floats * omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < tasks; ++t) {
      const int qb = p.causal ? nqb - 1 - t / bh : t / bh;
      const int b = (t % bh) / p.q_heads, h = (t % bh) % p.q_heads;
      k.prefill(p, b, h, qb * k.q_tile, scratch);
    }
  }
}

void run_decode(const AttnKernel& k, const AttnProblem& p, const AttnPlan& plan, float* ws) {
  const int chunks = plan.kv_chunks;
  const int rows = p.q_len * p.q_heads;
  const int64_t P = decode_part_floats(p.head_dim);
  const int chunk_len = ceil_div(ceil_div(p.kv_len, chunks), k.kv_tile) * k.kv_tile;
  float* parts = ws + plan.scratch_floats * plan.threads;  // (batch, chunks, rows, P)
#pragma omp parallel num_threads(plan.threads)
  {
    float* scratch = ws + plan.scratch_floats * omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < p.batch * chunks; ++t) {
      const int b = t / chunks, c = t % chunks;
      const int k0 = std::min(p.kv_len, c * chunk_len);
      const int k1 = std::min(p.kv_len, k0 + chunk_len);
      k.decode(p, b, k0, k1, parts + size_t(t) * rows * P, scratch);
    }
    // Merge chunk partials per (batch, row):
    //   M = max_c m_c;  L = Σ_c l_c·2^(m_c − M);  O = Σ_c acc_c·2^(m_c − M) / L
#pragma omp for schedule(static)
    for (int t = 0; t < p.batch * rows; ++t) {
      const int b = t / rows, r = t % rows;
      const float* first = parts + (size_t(b) * chunks * rows + r) * P;
      const int64_t cstride = int64_t(rows) * P;
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
      const float inv = 1.0f / L;
      for (int d = 0; d < p.head_dim; ++d) {
        float acc = 0.0f;
        for (int c = 0; c < chunks; ++c) acc += first[c * cstride + kPartAcc + d] * w[c];
        o[d] = acc * inv;
      }
    }
  }
}

}  // namespace

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
