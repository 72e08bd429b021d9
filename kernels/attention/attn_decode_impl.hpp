// The decode attention body (few queries, a long KV cache): one task covers one
// sequence and one chunk of its keys for every head, and leaves a partial softmax
// state (m, l, acc) per query row that the driver merges across chunks ("split-KV", as
// in FlashDecoding), so one token on a long cache still uses every core.
//
// Decode is bound by reading K and V, so each block of KT positions is read once per
// pass and every instruction on it is a load feeding an FMA: (1) scores for every
// (row, key), W keys finished by one lane-wise horizontal sum; (2) the online-softmax
// update per row; (3) acc += P·V with the accumulator row held in registers.
// A cache that is not in L2/L3 (every layer's but the last, in a model) is read at the
// bandwidth only if its reads overlap the arithmetic: steps 1 and 3 walk the block in
// groups of positions, every head's slice of a group before the next group (the group's
// rows are adjacent in the cache), and each asks for the slice kPrefetchAhead positions
// further on. Measured (llama-134m's layer shape, 12 heads × 64, f16, 576 positions, 48
// caches in turn so each is cold, 2 threads): 1.06 → 0.69 ms per 12 layers (20 → 31 GB/s),
// of which the group-outer order of step 1 alone gave 1.07 → 0.95; 32 positions ahead read
// slower than 16, 64 slower still (lines evicted before their use); hints to L2 slower than
// to L1. With the cache already in L2/L3 it is ~10% slower (0.43 → 0.49 ms).
// The session's 16-bit cache is tiled (kKvTileRows positions, every head's K rows of the
// tile head-major, then V: runtime/session_buffers.hpp) and read tile by tile: step 1
// reads each head's 16 K rows of a tile front to back (scores_rows), every head's before
// the next tile's, step 3 its 16 V rows likewise, so one call reads its chunk's K and V
// in address order. Zen 4, 2 threads, llama-134m's 12 × 64 heads at 576 keys, f16, 48
// caches in turn: ~90-100 → 70-75 µs per layer; in the model 1.31-1.45 → 0.98-1.09 ms of
// attention per decode step (Q4_K_M, 3 rounds alternating with the position-major
// layout), BF16 1.43-1.47 → 0.97-1.02, llama-1b-like (GQA 32/8) 2.38 → 1.67. A read-only
// loop over the old layout in this kernel's order ran at 10-16 GB/s where a sequential one
// ran at 24-31 (one thread); over the tiles, 23-25. The prefetchers alone kept up there.
// On the Zen 5 (2026-12-03) asking for each head's rows of the next tile into L1 as its
// rows of this one are read (K in step 1, V in step 3: one tile, 2·16 rows of every head,
// ahead) cut the model's attention by a fifth or more: `headwise bench FILE --threads 2
// --prompt-len 512 --kv-type f16`, alternating env-switched rounds, llama-134m Q4_K_M
// 80-104 → 62-78 ms of attention over 128 steps (7 rounds, decode faster in each),
// llama-1b-like Q4_K_M 80-110 → 55-73 ms over 64 (3 rounds); into L2 instead, or 2 or 4
// tiles ahead, no better or slower. On Zen 4 (2026-12-08) the same requests into L1 gain
// nothing over none, and into L2 they cut cold calls by 10-40% and llama-134m Q4_K_M's
// decode steps by 6-10%; a plain cache's requests kPrefetchAhead positions on likewise
// (an f32 cache's steps 13-19%). The level is the plan's (AttnAhead, attention.hpp has
// the figures), a template argument here.
// Those requests were first issued as a burst, a head's whole next tile (32 lines of a
// 64-feature f16 head) before its rows of this one; they are now spread one row (or one
// feature slice of a row) at a time through the loops that read this tile's rows, so
// the misses in flight never pile up at the start of a head (a burst filled the miss
// buffers: the prefetch instructions themselves took a fifth of a warm call's samples
// under perf). Zen 5 (2026-12-07), `headwise bench attention --threads 2 --copies 48`
// (cold), the old binary and the new alternating, medians over the rounds:
// llama-134m's 12 × 64 heads at 576 keys f16 52.8 → 49.8 µs (6 rounds; an earlier set
// of 8 rounds 52 → 44, new faster in each), bf16 54.4 → 46.8 (4 rounds, each faster);
// llama-1b-like's 32/8 × 64 at 528 keys 61.3 → 58.9 (6); an 8B-like 32/8 × 128 at 1040
// keys 174 → 143 (3, each faster). The requests sit after the FMAs in pv_group (before
// them GCC 12 kept the 16 accumulators on the stack) and take no loop (prefetch_span).
// A block is 4 tiles (KT = 64, attention.inc), not one: step 2's per-row reductions and
// branches and step 3's accumulator loads and stores come once per 64 keys. Zen 5, f16,
// `headwise bench attention` (3 alternating rounds; it lays K and V out position-major,
// not in tiles): llama-134m's 12 × 64 heads at 576 keys, 2 threads, 48 caches in turn
// 50-54 → 39-46 µs, in cache 27.7-28.5 → 25.2-26.2; 256 keys on one thread 16.7-17.9 →
// 15.2-16.0; llama-1b-like's 32/8 heads 52-53 → 50-51 cold, one thread 23.8-25.8 →
// 20.6-21.2; AVX2 12 heads 49-51 → 46-47 cold. Blocks of 8 or 16 tiles were no faster.
// In the model, over the tiled cache, the change stayed inside the host's noise
// (llama-134m Q4_K_M attention 82-97 against 93-97 ms over 128 steps, 4 rounds).
//
// With grouped-query attention (G query heads per KV head) the G rows of a KV head are
// taken together when G is 2, 4, 8 or the vector width (scores_group, pv_group): each K
// and V vector is loaded and widened once for them, not G times. attention_bench, 2
// threads, llama-1b-like's 32/8 × 64 layer (2 alternating runs each): f16 at 512 keys
// 0.074-0.081 → 0.065-0.069 ms, at 2048 0.229-0.280 → 0.173-0.213 ms, bf16 0.211-0.280 →
// 0.180-0.191; f32 unchanged (0.21); in the model (llama-1b-like Q4_K_M, f16 cache)
// attention 1.39 → 1.10 ms per step.
//
// Templated on the vector vocabulary S, the K/V element tag E (KvF32, KvF16, KvBf16:
// 16-bit elements are widened to fp32 in registers as they are loaded, so a 16-bit cache
// is read at half the bytes) and the key block KT; instantiated once per ISA and type.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include "kernels/attention/attention.hpp"
#include "kernels/simd/widen.hpp"

namespace headwise::kernels {
namespace {

// kAhead: the locality of the requests for keys ahead, a tiled cache's next tile or a
// plain cache's rows kPrefetchAhead positions on (__builtin_prefetch's third argument, a
// constant): 3 into L1, 2 into L2 (AttnAhead; attn_decode below picks one per call).
template <class S, class E, int KT, int kAhead>
struct AttnDecode {
  using V = typename S::V;
  using T = typename E::T;
  using L = simd::Widen<S, E>;
  static constexpr int W = S::W;
  // Positions per pass of step 3: a 16-bit cache's whole tile (in a tiled cache one
  // head's rows of it are adjacent; a group never straddles two tiles), an fp32 cache's 8
  // (see step 3).
  static constexpr int kPvGroup = !std::is_same_v<E, KvF32> ? kKvTileRows : 8;
  // Positions ahead of the one read that steps 1 and 3 prefetch in a plain cache (see
  // run()).
  static constexpr int kPrefetchAhead = 16;
  // Head sizes up to which step 1 holds a query row in registers and reads key rows
  // whole (scores_rows): W accumulators and D / W query vectors in AVX-512's 32
  // registers; larger (and AVX2's 16 registers at 64) take the feature-outer loop.
  static constexpr int kRowMajorD = 4 * W;
  static_assert(kKvTileRows % W == 0 && kKvTileRows % kPvGroup == 0 && KT % kKvTileRows == 0,
                "groups of keys never straddle a tile of a tiled cache");

  // Asks for N rows (D elements each, rows `stride` elements apart) to be brought into L1,
  // unrolled: a row's first two lines without a loop (a 64-feature f16 row is two). As
  // loops over rows and lines these requests cost ~6% of a call in cache (12 × 64 heads,
  // 544 keys, f16, 2 threads: 16.3-16.7 -> 15.0-15.6 µs; cold, 32/8 heads at 528 keys:
  // 31.1-31.5 -> 28.7-29.8 µs). Both lines are needed: the first alone leaves the second
  // to a demand miss (cold 12-head call 40 -> 48 µs); none at all, 25% faster in cache.
  // (A first form, a branch on the row length with an early return, compiled with GCC 12
  // to no request at all: count prefetcht0 in the object when changing this.)
  template <int N>
  static inline void prefetch_rows(const T* first, int64_t stride, int D) {
    const int bytes = D * int(sizeof(T));
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {
      const char* r = reinterpret_cast<const char*>(first + i * stride);
      __builtin_prefetch(r, 0, kAhead);
      if (bytes > 64) __builtin_prefetch(r + 64, 0, kAhead);
      for (int o = 128; o < bytes; o += 64) __builtin_prefetch(r + o, 0, kAhead);
    }
  }

  // acc[i] += q · k_i for the W key rows k_i (rows st apart, D = NV·W features): the
  // query row in registers, the key rows read one after another, each front to back —
  // the order they lie in (a tiled cache: one run of W·D elements).
  template <int NV>
  static inline void scores_rows(const float* qs, const T* kr, int64_t st, V* acc, const T* pf) {
    V q[NV];
    for (int u = 0; u < NV; ++u) q[u] = S::loada(qs + u * W);
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) {
      if (pf) prefetch_span<NV * W * int(sizeof(T))>(pf + i * st);
      for (int u = 0; u < NV; ++u) acc[i] = S::fma(q[u], L::load(kr + i * st + u * W), acc[i]);
    }
  }
  // Asks for the kBytes at p (a row, or a row's slice of features) into L1 or L2
  // (kAhead), one request a line and no loop: the callers' accumulators stay in
  // registers (a loop over a row's lines in pv_group's loop made GCC 12 keep them in
  // memory).
  template <int kBytes>
  static inline void prefetch_span(const T* p) {
    prefetch_lines(reinterpret_cast<const char*>(p), std::make_index_sequence<(std::max(kBytes, 1) + 63) / 64>());
  }
  template <size_t... L>
  static inline void prefetch_lines(const char* c, std::index_sequence<L...>) {
    (__builtin_prefetch(c + 64 * L, 0, kAhead), ...);
  }

  // q · k over D features (the query row is zero padded to a multiple of W).
  static inline float dot(const float* q, const T* k, int D) {
    V a0 = S::zero(), a1 = S::zero();
    int d = 0;
    for (; d + 2 * W <= D; d += 2 * W) {
      a0 = S::fma(S::loada(q + d), L::load(k + d), a0);
      a1 = S::fma(S::loada(q + d + W), L::load(k + d + W), a1);
    }
    for (; d + W <= D; d += W) a0 = S::fma(S::loada(q + d), L::load(k + d), a0);
    if (d < D) a1 = S::fma(S::loada(q + d), L::load_partial(k + d, D - d), a1);
    return S::hsum(a0 + a1);
  }

  // acc(0 .. NV·W) += Σ_j w_j · v(j, 0 .. NV·W), rows of v vstride apart.
  template <int NV>
  static inline void pv(float* acc, const T* v, int64_t vstride, const float* w, int nk, const T* pf) {
    if (pf) pv_body<NV, true>(acc, v, vstride, w, nk, pf);
    else pv_body<NV, false>(acc, v, vstride, w, nk, pf);
  }
  template <int NV, bool kPf>
  static inline void pv_body(float* acc, const T* v, int64_t vstride, const float* w, int nk, const T* pf) {
    // Two accumulator sets (even and odd positions) when they fit in registers: the
    // FMA latency, not the load or FMA rate, would otherwise bound NV ≤ 4 chains.
    constexpr int NS = NV <= 4 ? 2 : 1;
    V a[NS][NV];
    for (int u = 0; u < NV; ++u) a[0][u] = S::load(acc + u * W);
    for (int s = 1; s < NS; ++s)
      for (int u = 0; u < NV; ++u) a[s][u] = S::zero();
    int j = 0;
    for (; j + NS <= nk; j += NS) {
#pragma GCC unroll 2
      for (int s = 0; s < NS; ++s) {
        if constexpr (kPf) prefetch_span<NV * W * int(sizeof(T))>(pf + (j + s) * vstride);
        const V wj = S::set1(w[j + s]);
#pragma GCC unroll 8
        for (int u = 0; u < NV; ++u) a[s][u] = S::fma(wj, L::load(v + (j + s) * vstride + u * W), a[s][u]);
      }
    }
    for (; j < nk; ++j) {
      const V wj = S::set1(w[j]);
      for (int u = 0; u < NV; ++u) a[0][u] = S::fma(wj, L::load(v + j * vstride + u * W), a[0][u]);
    }
    for (int s = 1; s < NS; ++s)
      for (int u = 0; u < NV; ++u) a[0][u] = a[0][u] + a[s][u];
    for (int u = 0; u < NV; ++u) S::store(acc + u * W, a[0][u]);
  }

  // GQA: the G query rows of one KV head (adjacent rows: r = t·Hq + hq) read each K and
  // V element once, widened once, for all G (llama-1b-like's 32/8 heads read their f16
  // cache at ~13 GB/s when every row loaded and widened it again).
  // Scores of the G rows against W keys (rows ldk apart), KB = W / G keys per pass so
  // the G·KB = W sums fit one lane-wise horizontal sum; out rows ldo apart.
  template <int G>
  static inline void scores_group(const float* qs, int Dp, const T* kr, int64_t ldk, int D, float* out, int ldo,
                                  const T* pf) {
    constexpr int KB = W / G;
    for (int i0 = 0; i0 < W; i0 += KB) {
      V acc[W];
      for (int a = 0; a < W; ++a) acc[a] = S::zero();
      for (int d = 0; d < D; d += W) {
        V q[G];
        for (int g = 0; g < G; ++g) q[g] = S::loada(qs + g * Dp + d);
        if (pf && d * int(sizeof(T)) % 64 == 0)
          for (int i = 0; i < KB; ++i) __builtin_prefetch(pf + (i0 + i) * ldk + d, 0, kAhead);
        for (int i = 0; i < KB; ++i) {
          const V k = L::load(kr + (i0 + i) * ldk + d);
          for (int g = 0; g < G; ++g) acc[g * KB + i] = S::fma(q[g], k, acc[g * KB + i]);
        }
      }
      alignas(64) float sums[W];
      S::store(sums, S::hsum_lanes(acc));
      for (int g = 0; g < G; ++g)
        for (int i = 0; i < KB; ++i) out[g * ldo + i0 + i] = sums[g * KB + i];
    }
  }
  // acc_g(0 .. NV·W) += Σ_j w_g(j) · v(j, 0 .. NV·W) for the G rows (acc rows lda apart,
  // weight rows ldw apart): G·NV accumulators, G·NV ≤ 16.
  template <int G, int NV>
  static inline void pv_group(float* acc, int64_t lda, const T* v, int64_t vstride, const float* w, int ldw, int nk,
                              const T* pf) {
    if (pf) pv_group_body<G, NV, true>(acc, lda, v, vstride, w, ldw, nk, pf);
    else pv_group_body<G, NV, false>(acc, lda, v, vstride, w, ldw, nk, pf);
  }
  template <int G, int NV, bool kPf>
  static inline void pv_group_body(float* acc, int64_t lda, const T* v, int64_t vstride, const float* w, int ldw,
                                   int nk, const T* pf) {
    V a[G][NV];
    for (int g = 0; g < G; ++g)
      for (int u = 0; u < NV; ++u) a[g][u] = S::load(acc + g * lda + u * W);
    // Fully unrolled, with the request after the FMAs: any loop left in this body (or the
    // request before the FMAs) made GCC 12 keep the G·NV sums on the stack. objdump of
    // attn_fwd_f16_avx512.cpp.o shows no FMA with an (%rsp) operand here; check it after
    // changing this loop.
    for (int j = 0; j < nk; ++j) {
      V wj[G];
#pragma GCC unroll 16
      for (int g = 0; g < G; ++g) wj[g] = S::set1(w[g * ldw + j]);
#pragma GCC unroll 16
      for (int u = 0; u < NV; ++u) {
        const V x = L::load(v + j * vstride + u * W);
#pragma GCC unroll 16
        for (int g = 0; g < G; ++g) a[g][u] = S::fma(wj[g], x, a[g][u]);
      }
      if constexpr (kPf) prefetch_span<NV * W * int(sizeof(T))>(pf + j * vstride);
    }
    for (int g = 0; g < G; ++g)
      for (int u = 0; u < NV; ++u) S::store(acc + g * lda + u * W, a[g][u]);
  }
  template <int G>
  static inline void pv_group_row(float* acc, int64_t lda, const T* v, int64_t vstride, const float* w, int ldw,
                                  int nk, int D, const T* pf) {
    // G·NV sums next to G weights and one V vector: half the register file (AVX-512's 32:
    // 16 / G; AVX2's 16: 8 / G — 16 / G spilled the sums, llama-1b-like's 32/8 × 64 layer
    // at 528 f16 keys took 0.29 ms on one Zen 1 core).
    constexpr int kMaxNV = std::max(1, (W >= 16 ? 16 : 8) / G);
    int d = 0;
    while (d + W <= D) {
      const int nv = std::min(kMaxNV, (D - d) / W);
      if constexpr (kMaxNV >= 8)
        if (nv >= 8) { pv_group<G, kMaxNV >= 8 ? 8 : 1>(acc + d, lda, v + d, vstride, w, ldw, nk, pf ? pf + d : nullptr); d += 8 * W; continue; }
      if constexpr (kMaxNV >= 4)
        if (nv >= 4) { pv_group<G, kMaxNV >= 4 ? 4 : 1>(acc + d, lda, v + d, vstride, w, ldw, nk, pf ? pf + d : nullptr); d += 4 * W; continue; }
      if constexpr (kMaxNV >= 2)
        if (nv >= 2) { pv_group<G, kMaxNV >= 2 ? 2 : 1>(acc + d, lda, v + d, vstride, w, ldw, nk, pf ? pf + d : nullptr); d += 2 * W; continue; }
      pv_group<G, 1>(acc + d, lda, v + d, vstride, w, ldw, nk, pf ? pf + d : nullptr);
      d += W;
    }
    for (int g = 0; g < G; ++g)
      for (int dd = d; dd < D; ++dd) {
        float a = acc[g * lda + dd];
        for (int j = 0; j < nk; ++j) a += w[g * ldw + j] * L::one(v + j * vstride + dd);
        acc[g * lda + dd] = a;
      }
  }

  // Rows r = t·Hq + hq (query position t, query head hq); part row r holds m, l, acc.
  static void run(const AttnProblem& p, int b, int k0, int k1, float* part, float* scratch) {
    const int D = p.head_dim, G = p.group(), Hq = p.q_heads, R = p.q_len * Hq;
    const int Dp = decode_row_floats(D);
    const int64_t P = decode_part_floats(D);
    float* Qs = scratch;              // (R, Dp) query rows · scale · log2(e), zero padded
    float* sc = Qs + size_t(R) * Dp;  // (R, KT) scores, then probabilities

    const float c = p.scale * 1.4426950408889634f;
    const int valid = p.kv_valid ? std::min(p.kv_len, p.kv_valid[b]) : p.kv_len;
    const int off = p.causal_offset();
    for (int r = 0; r < R; ++r) {
      const float* q = p.q.at(b, r / Hq, r % Hq);
      float* qs = Qs + size_t(r) * Dp;
      for (int d = 0; d < D; ++d) qs[d] = q[d] * c;
      for (int d = D; d < Dp; ++d) qs[d] = 0.0f;
      float* pr = part + r * P;
      pr[0] = -INFINITY;
      pr[1] = 0.0f;
      std::fill(pr + kPartAcc, pr + kPartAcc + D, 0.0f);
    }
    // Query position t sees keys below end_of(t).
    auto end_of = [&](int t) { return p.causal ? std::min(valid, off + t + 1) : valid; };
    const int kstop = std::min(k1, end_of(p.q_len - 1));  // the last position sees most
    // f(r, t, hk, g) for every row r = t·Hq + hk·G + g (query position t, KV head hk, its
    // g-th query head), in row order: the loops below name a row's KV head without the
    // three integer divisions per (row, key group) they had (no measurable time on Zen 1:
    // they overlap the vector work; kept for the clearer loops).
    const int Hkv = p.kv_heads;
    auto each_row = [&](auto&& f) {
      for (int t = 0, r = 0; t < p.q_len; ++t)
        for (int hk = 0; hk < Hkv; ++hk)
          for (int g = 0; g < G; ++g, ++r) f(r, t, hk, g);
    };
    // The GQA paths (scores_group, pv_group) for G of 2, 4, 8 or W that divides W.
    const bool grouped = G >= 2 && W % G == 0 && (G <= 8 || G == W);

    // Tiled cache: rows i of a group are i·st apart within its tile, the next tile is
    // read front to back after this one, and each head's rows of it are asked for as
    // this tile's are read; plain: each group asks for the rows kPrefetchAhead on.
    const bool tiled = p.k.stile != 0;
    assert(!tiled || (k0 % kKvTileRows == 0 && p.v.stile != 0));
    // A tiled cache's row (K or V, tile stride stile) one tile on, when the chunk goes on
    // past the tile holding key `key`; null otherwise (nothing to ask for).
    auto next_tile = [&](const T* row, int64_t stile, int key) -> const T* {
      return tiled && key + kKvTileRows < kstop ? row + stile : nullptr;
    };
    for (int kb = k0; kb < kstop; kb += KT) {
      const int nk = std::min(KT, kstop - kb);

      // 1) sc(r, j) = Qs(r) · K(kb + j, hq / G); −inf where row r may not see the key.
      //    W keys at a time: their partial-sum vectors are reduced together by one
      //    lane-wise horizontal sum instead of W separate ones. Tiles of kKvTileRows
      //    keys outer, then rows, then the tile's key groups (one when W = 16): a tile's
      //    cache rows (every head) are read before the next tile's, and a tiled cache,
      //    which holds a head's rows of the tile together, is read in address order.
      const int nkw = D % W == 0 ? nk / W * W : 0;
      for (int jt = 0; jt < nkw && grouped; jt += kKvTileRows)
        each_row([&](int r0, int, int hk, int g) {  // rows r0 .. r0 + G − 1 share KV head hk
          if (g != 0) return;
          const float* qs = Qs + size_t(r0) * Dp;
          for (int j = jt; j < std::min(nkw, jt + kKvTileRows); j += W) {
            const T* kr = p.k.at<T>(b, kb + j, hk);
            if (!tiled && kb + j + kPrefetchAhead + W <= kstop)
              prefetch_rows<W>(kr + kPrefetchAhead * p.k.st, p.k.st, D);
            const T* pf = next_tile(kr, p.k.stile, kb + jt);
            float* out = sc + size_t(r0) * KT + j;
            switch (G) {
              case 2: scores_group<2>(qs, Dp, kr, p.k.st, D, out, KT, pf); break;
              case 4: scores_group<4>(qs, Dp, kr, p.k.st, D, out, KT, pf); break;
              case 8: scores_group<8>(qs, Dp, kr, p.k.st, D, out, KT, pf); break;
              default: scores_group<W>(qs, Dp, kr, p.k.st, D, out, KT, pf); break;  // G == W
            }
          }
        });
      for (int jt = 0; jt < nkw && !grouped; jt += kKvTileRows)
        each_row([&](int r, int, int hk, int g) {
          const float* qs = Qs + size_t(r) * Dp;
          for (int j = jt; j < std::min(nkw, jt + kKvTileRows); j += W) {
            const T* kr = p.k.at<T>(b, kb + j, hk);
            if (!tiled && g == 0 && kb + j + kPrefetchAhead + W <= kstop)  // once per KV head
              prefetch_rows<W>(kr + kPrefetchAhead * p.k.st, p.k.st, D);
            const T* pf = g == 0 ? next_tile(kr, p.k.stile, kb + jt) : nullptr;  // once per KV head
            V acc[W];
            for (int i = 0; i < W; ++i) acc[i] = S::zero();
            if (D <= kRowMajorD && D % W == 0) {
              switch (D / W) {
                case 1: scores_rows<1>(qs, kr, p.k.st, acc, pf); break;
                case 2: scores_rows<2>(qs, kr, p.k.st, acc, pf); break;
                case 3: scores_rows<3>(qs, kr, p.k.st, acc, pf); break;
                default: scores_rows<4>(qs, kr, p.k.st, acc, pf); break;
              }
            } else {
              for (int d = 0; d < D; d += W) {
                if (pf && d * int(sizeof(T)) % 64 == 0)  // the next tile's lines holding features d.. of each row
                  for (int i = 0; i < W; ++i) __builtin_prefetch(pf + i * p.k.st + d, 0, kAhead);
                const V q = S::loada(qs + d);
                for (int i = 0; i < W; ++i) acc[i] = S::fma(q, L::load(kr + i * p.k.st + d), acc[i]);
              }
            }
            S::store(sc + size_t(r) * KT + j, S::hsum_lanes(acc));
          }
        });
      each_row([&](int r, int t, int hk, int) {
        const float* qs = Qs + size_t(r) * Dp;
        float* s = sc + size_t(r) * KT;
        for (int j = nkw; j < nk; ++j) s[j] = dot(qs, p.k.at<T>(b, kb + j, hk), D);
        for (int j = std::max(0, end_of(t) - kb); j < nk; ++j) s[j] = -INFINITY;
      });

      // 2) per row: m' = max(m, max_j s_j); P_j = 2^(s_j − m'); α = 2^(m − m');
      //    l = α·l + Σ_j P_j; acc = α·acc. A row with nothing visible keeps its state
      //    and gets all-zero P.
      for (int r = 0; r < R; ++r) {
        float* s = sc + size_t(r) * KT;
        float* pr = part + r * P;
        float mx = pr[0];
        {
          V vm = S::set1(mx);
          int j = 0;
          for (; j + W <= nk; j += W) vm = S::max(vm, S::load(s + j));
          mx = S::hmax(vm);
          for (; j < nk; ++j) mx = std::max(mx, s[j]);
        }
        if (mx == -INFINITY) {
          std::fill(s, s + nk, 0.0f);
          continue;
        }
        V sum = S::zero();
        int j = 0;
        for (; j + W <= nk; j += W) {
          const V pj = S::exp2(S::load(s + j) - S::set1(mx));
          S::store(s + j, pj);
          sum = sum + pj;
        }
        float tail = 0.0f;
        for (; j < nk; ++j) {
          s[j] = s[j] == -INFINITY ? 0.0f : std::exp2(s[j] - mx);
          tail += s[j];
        }
        // α = 1 exactly when the running max stands (most blocks once a few are seen):
        // no call to exp2 for it.
        const float alpha = pr[0] == -INFINITY ? 0.0f : pr[0] == mx ? 1.0f : std::exp2(pr[0] - mx);
        pr[0] = mx;
        pr[1] = alpha * pr[1] + S::hsum(sum) + tail;
        if (alpha != 1.0f) {
          const V va = S::set1(alpha);
          float* acc = pr + kPartAcc;
          int d = 0;
          for (; d + W <= D; d += W) S::store(acc + d, S::load(acc + d) * va);
          for (; d < D; ++d) acc[d] *= alpha;
        }
      }

      // 3) acc(r) += Σ_j P(r, j) · V(kb + j, hq / G), kPvGroup positions at a time: each
      //    row's accumulator (up to 8 feature vectors) stays in registers across the
      //    group, and walking the rows head by head reads the group's kPvGroup V rows front
      //    to back — kPvGroup sequential streams the prefetchers follow (measured on S4:
      //    ~20% more bandwidth than one head over the whole block of KT positions; a tiled
      //    cache's block is one tile, whose V rows a head holds together).
      for (int j0 = 0; j0 < nk; j0 += kPvGroup) {
        const int nj = std::min(kPvGroup, nk - j0);
        if (grouped) each_row([&](int r0, int, int hk, int g) {
          if (g != 0) return;
          const T* vr = p.v.at<T>(b, kb + j0, hk);
          if (!tiled && kb + j0 + kPrefetchAhead + kPvGroup <= kstop)
            prefetch_rows<kPvGroup>(vr + kPrefetchAhead * p.v.st, p.v.st, D);
          const T* pf = next_tile(vr, p.v.stile, kb + j0);
          const float* w = sc + size_t(r0) * KT + j0;
          float* acc = part + r0 * P + kPartAcc;
          switch (G) {
            case 2: pv_group_row<2>(acc, P, vr, p.v.st, w, KT, nj, D, pf); break;
            case 4: pv_group_row<4>(acc, P, vr, p.v.st, w, KT, nj, D, pf); break;
            case 8: pv_group_row<8>(acc, P, vr, p.v.st, w, KT, nj, D, pf); break;
            default: pv_group_row<W>(acc, P, vr, p.v.st, w, KT, nj, D, pf); break;
          }
        });
        if (!grouped) each_row([&](int r, int, int hk, int g) {
          const T* vr = p.v.at<T>(b, kb + j0, hk);
          if (!tiled && g == 0 && kb + j0 + kPrefetchAhead + kPvGroup <= kstop)  // once per KV head
            prefetch_rows<kPvGroup>(vr + kPrefetchAhead * p.v.st, p.v.st, D);
          const T* pf0 = g == 0 ? next_tile(vr, p.v.stile, kb + j0) : nullptr;  // once per KV head
          const float* w = sc + size_t(r) * KT + j0;
          float* acc = part + r * P + kPartAcc;
          int d = 0;
          while (d + W <= D) {
            const int nv = std::min(8, (D - d) / W);
            const T* pf = pf0 ? pf0 + d : nullptr;
            switch (nv) {
              case 8: pv<8>(acc + d, vr + d, p.v.st, w, nj, pf); break;
              case 7: pv<7>(acc + d, vr + d, p.v.st, w, nj, pf); break;
              case 6: pv<6>(acc + d, vr + d, p.v.st, w, nj, pf); break;
              case 5: pv<5>(acc + d, vr + d, p.v.st, w, nj, pf); break;
              case 4: pv<4>(acc + d, vr + d, p.v.st, w, nj, pf); break;
              case 3: pv<3>(acc + d, vr + d, p.v.st, w, nj, pf); break;
              case 2: pv<2>(acc + d, vr + d, p.v.st, w, nj, pf); break;
              default: pv<1>(acc + d, vr + d, p.v.st, w, nj, pf); break;
            }
            d += nv * W;
          }
          for (; d < D; ++d) {
            float a = acc[d];
            for (int jj = 0; jj < nj; ++jj) a += w[jj] * L::one(vr + jj * p.v.st + d);
            acc[d] = a;
          }
        });
      }
    }
  }
};

// The decode entry of a translation unit: the level of the requests for keys ahead
// chosen once per call.
template <class S, class E, int KT>
void attn_decode(const AttnProblem& p, int b, int k0, int k1, float* part, float* scratch, AttnAhead ahead) {
  if (ahead == AttnAhead::l2) return AttnDecode<S, E, KT, 2>::run(p, b, k0, k1, part, scratch);
  AttnDecode<S, E, KT, 3>::run(p, b, k0, k1, part, scratch);
}

}  // namespace
}  // namespace headwise::kernels
