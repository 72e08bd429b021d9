// The fused (flash-style) prefill attention body, templated on the vector vocabulary
// S (simd::F32<arch> or simd::Scalar), the K/V element tag E (KvF32, KvF16, KvBf16) and
// the tile shape. Each ISA's translation unit instantiates it once per element type
// (attn_fwd_<type>_<isa>.cpp).
//
// A 16-bit K/V tile is widened to fp32 once per tile, row by row in registers, into
// (KT, D) scratch (L1/L2-resident), and the fp32 micro-kernels below run on it: each tile
// meets QT queries, so the conversion costs 1/QT of the tile's FMAs, whereas widening
// inside the micro-kernels would add a shuffle and a convert to every broadcast, i.e.
// to every NQ ≤ 4 FMAs. The fp32 path reads the cache in place, as before.
//
// Online softmax after Milakov & Gimelshein 2018 (arXiv:1805.02867) and FlashAttention
// (Dao et al. 2022, arXiv:2205.14135): a tile of QT queries meets the keys KT at a time;
// only a QT×KT score tile and a running (max, sum, accumulator) per query ever exist.
//
// Layout choice — everything is "query-major in lanes": the query tile is packed
// transposed, Qt (D, QT), so one vector holds the same feature of W consecutive queries.
// Then
//   St(j, :) = Σ_d K(j, d) · Qt(d, :)        broadcast a key element, FMA a query vector
//   Ot(d, :) = α ⊙ Ot(d, :) + Σ_j V(j, d) · St(j, :)
// and every softmax statistic (max, sum, α) is a plain vertical vector op: no
// horizontal reductions, no transposes of K or V, and any head_dim from 1 to 256 runs
// at full vector width (head_dim is only ever a loop bound, never a lane count).
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <type_traits>

#include "kernels/attention/attention.hpp"
#include "kernels/simd/widen.hpp"

namespace headwise::kernels {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

// QV query vectors per tile; KT keys per tile; register blocks of NKR keys (Q·Kᵀ) or NDR
// features (P·V) by QR query vectors. A tile wider than a register block (QV > QR) lets
// ISAs with few registers (AVX2: 16) still reuse each K/V tile for 64 queries.
template <class S, class E, int QV, int KT, int NKR, int NDR, int QR = QV>
struct AttnFwd {
  static_assert(QV % QR == 0, "a tile is a whole number of register blocks");
  using V = typename S::V;
  static constexpr int W = S::W;
  static constexpr int QT = QV * W;  // queries per tile

  // ---- register-blocked micro-kernels over NQ ≤ QR query vectors ------------------------

  // St(i, :) = Σ_d K(key_i, d) · Qt(d, :) for NK keys and the NQ query vectors at Qt/St.
  template <int NK, int NQ>
  static inline void qk_block(const float* Qt, int D, const float* const* krow, float* St) {
    V acc[NK][NQ];
    for (int i = 0; i < NK; ++i)
      for (int v = 0; v < NQ; ++v) acc[i][v] = S::zero();
    for (int d = 0; d < D; ++d) {
      V q[NQ];
      for (int v = 0; v < NQ; ++v) q[v] = S::loada(Qt + d * QT + v * W);
      for (int i = 0; i < NK; ++i) {
        const V kb = S::set1(krow[i][d]);
        for (int v = 0; v < NQ; ++v) acc[i][v] = S::fma(kb, q[v], acc[i][v]);
      }
    }
    for (int i = 0; i < NK; ++i)
      for (int v = 0; v < NQ; ++v) S::storea(St + i * QT + v * W, acc[i][v]);
  }

  // Ot(d0 .. d0+ND−1, :) = α ⊙ Ot(d, :) + Σ_{j<nk} V(j, d) · St(j, :) for NQ query vectors.
  // v0 points at V(key 0, d0); rows are vstride floats apart. (Copying the V tile to
  // contiguous rows first measured ~10% slower: the copy is a separate, load-bound
  // phase, while here the strided loads overlap the FMAs.)
  template <int ND, int NQ>
  static inline void pv_block(float* Ot, const float* St, const float* v0, int64_t vstride,
                              int nk, const V* alpha) {
    V acc[ND][NQ];
    for (int i = 0; i < ND; ++i)
      for (int v = 0; v < NQ; ++v) acc[i][v] = S::loada(Ot + i * QT + v * W) * alpha[v];
    for (int j = 0; j < nk; ++j) {
      V pj[NQ];
      for (int v = 0; v < NQ; ++v) pj[v] = S::loada(St + j * QT + v * W);
      const float* vj = v0 + j * vstride;
      for (int i = 0; i < ND; ++i) {
        const V vb = S::set1(vj[i]);
        for (int v = 0; v < NQ; ++v) acc[i][v] = S::fma(vb, pj[v], acc[i][v]);
      }
    }
    for (int i = 0; i < ND; ++i)
      for (int v = 0; v < NQ; ++v) S::storea(Ot + i * QT + v * W, acc[i][v]);
  }

  template <int NK, int NQ>
  static inline void qk_tail(int nk, const float* Qt, int D, const float* const* krow, float* St) {
    if constexpr (NK > 0) {
      if (nk == NK) return qk_block<NK, NQ>(Qt, D, krow, St);
      return qk_tail<NK - 1, NQ>(nk, Qt, D, krow, St);
    }
  }

  template <int ND, int NQ>
  static inline void pv_tail(int nd, float* Ot, const float* St, const float* v0, int64_t vstride,
                             int nk, const V* alpha) {
    if constexpr (ND > 0) {
      if (nd == ND) return pv_block<ND, NQ>(Ot, St, v0, vstride, nk, alpha);
      return pv_tail<ND - 1, NQ>(nd, Ot, St, v0, vstride, nk, alpha);
    }
  }

  // Q·Kᵀ for nk keys and NQ query vectors starting at vector v.
  template <int NQ>
  static void qk_vectors(int v, const float* Qt, int D, const float* kbase, int64_t kst, int nk,
                         float* St) {
    const float* krow[NKR];
    int j = 0;
    for (; j + NKR <= nk; j += NKR) {
      for (int i = 0; i < NKR; ++i) krow[i] = kbase + (j + i) * kst;
      qk_block<NKR, NQ>(Qt + v * W, D, krow, St + j * QT + v * W);
    }
    if (j < nk) {
      for (int i = 0; i < nk - j; ++i) krow[i] = kbase + (j + i) * kst;
      qk_tail<NKR - 1, NQ>(nk - j, Qt + v * W, D, krow, St + j * QT + v * W);
    }
  }

  // P·V for nk keys and NQ query vectors starting at vector v, blocked over NDR
  // features. A short remainder (D = 128 = 21·6 + 2) would run with too few
  // accumulators to hide the FMA latency, so the last full block and it are split
  // evenly (… + 4 + 4).
  template <int NQ>
  static void pv_vectors(int v, float* Ot, const float* St, const float* vbase, int64_t vst,
                         int D, int nk, const V* alpha) {
    float* Or = Ot + v * W;
    const float* Sr = St + v * W;
    const int full = D % NDR != 0 && D % NDR < NDR / 2 && D >= NDR ? D / NDR - 1 : D / NDR;
    int d = 0;
    for (; d < full * NDR; d += NDR) pv_block<NDR, NQ>(Or + d * QT, Sr, vbase + d, vst, nk, alpha + v);
    const int left = D - d;
    if (left > NDR) {
      const int half = left / 2;
      pv_tail<NDR - 1, NQ>(half, Or + d * QT, Sr, vbase + d, vst, nk, alpha + v);
      d += half;
    }
    if (d < D) pv_tail<NDR - 1, NQ>(D - d, Or + d * QT, Sr, vbase + d, vst, nk, alpha + v);
  }

  // Runs f.template operator()<NQ>(v) over query vectors [vs, QV) in register blocks of
  // QR, the last one narrower when QV − vs is not a multiple of QR.
  template <class F>
  static inline void over_vectors(int vs, F&& f) {
    int v = vs;
    for (; v + QR <= QV; v += QR) f(std::integral_constant<int, QR>(), v);
    switch (QV - v) {
      case 0: break;
      case 1: if constexpr (QR > 1) f(std::integral_constant<int, 1>(), v); break;
      case 2: if constexpr (QR > 2) f(std::integral_constant<int, 2>(), v); break;
      case 3: if constexpr (QR > 3) f(std::integral_constant<int, 3>(), v); break;
      default: assert(false);
    }
  }

  // ---- one step of the online softmax --------------------------------------------------
  // Keys key0 .. key0+nk−1 against query vectors [vs, QV); vectors below vs see none of
  // these keys (causal) and are left alone.
  // K rows are kst floats apart, V rows vst.
  static void keys(const AttnProblem& p, float* Qt, float* Ot, float* St, float* m, float* l,
                   const float* kbase, int64_t kst, const float* vbase, int64_t vst, int key0,
                   int nk, int vs, int q_pos0) {
    const int D = p.head_dim;

    // 1) scores: St(j, :) = K(key0 + j) · Qt
    over_vectors(vs, [&](auto nq, int v) { qk_vectors<decltype(nq)::value>(v, Qt, D, kbase, kst, nk, St); });

    // 2) causal mask, only where a key lies past the first live query's position:
    //    key key0 + j is hidden from query lane r when key0 + j > q_pos0 + r.
    if (p.causal && key0 + nk - 1 > q_pos0 + vs * W) {
      for (int j = 0; j < nk; ++j) {
        const int bound = key0 + j - q_pos0;  // query lanes r < bound are hidden
        for (int v = vs; v < QV && v * W < bound; ++v) {
          float* s = St + j * QT + v * W;
          S::storea(s, S::mask_lt(S::loada(s), v * W, bound));
        }
      }
    }

    // 3) online softmax, per query lane:
    //    m' = max(m, max_j S(j)); P(j) = 2^(S(j) − m'); α = 2^(m − m'); l = α·l + Σ_j P(j)
    V alpha[QV];
    for (int v = vs; v < QV; ++v) {
      V mx = S::loada(m + v * W);
      for (int j = 0; j < nk; ++j) mx = S::max(mx, S::loada(St + j * QT + v * W));
      // A lane that has seen no visible key yet keeps m' = −inf; a finite reference
      // (−3e38) keeps 2^(−inf − (−inf)) from making a NaN: its P and α are all 0.
      const V mref = S::max(mx, S::set1(-3.0e38f));
      V sum = S::zero();
      for (int j = 0; j < nk; ++j) {
        float* s = St + j * QT + v * W;
        const V pj = S::exp2(S::loada(s) - mref);
        S::storea(s, pj);
        sum = sum + pj;
      }
      alpha[v] = S::exp2(S::loada(m + v * W) - mref);
      S::storea(l + v * W, S::fma(alpha[v], S::loada(l + v * W), sum));
      S::storea(m + v * W, mx);
    }

    // 4) Ot = α ⊙ Ot + Vᵀ · P
    over_vectors(vs, [&](auto nq, int v) { pv_vectors<decltype(nq)::value>(v, Ot, St, vbase, vst, D, nk, alpha); });
  }

  static void run(const AttnProblem& p, int b, int hq, int q0, float* scratch) {
    const int D = p.head_dim;
    const int hk = hq / p.group();
    const int nq = std::min(QT, p.q_len - q0);  // live queries in this tile
    assert(nq > 0);
    float* Qt = scratch;               // (D, QT)
    float* Ot = Qt + size_t(D) * QT;   // (D, QT)
    float* St = Ot + size_t(D) * QT;   // (KT, QT)
    float* m = St + size_t(KT) * QT;   // (QT,) running max of scores, log2 units
    float* l = m + QT;                 // (QT,) running sum of 2^(s − m)
    float* Kt = l + QT;                // (KT, D) 16-bit K/V only: the tile widened
    float* Vt = Kt + size_t(KT) * D;   // (KT, D)

    // Qt(d, r) = Q(q0 + r, d) · scale · log2(e): the softmax then runs in base 2.
    // W×W blocks are transposed in registers; rows past the last query are zeros.
    const float c = p.scale * kLog2e;
    for (int r0 = 0; r0 < QT; r0 += W) {
      const float* qrow[W];
      for (int i = 0; i < W; ++i) qrow[i] = r0 + i < nq ? p.q.at(b, q0 + r0 + i, hq) : nullptr;
      int d = 0;
      for (; d + W <= D; d += W) {
        V blk[W];
        for (int i = 0; i < W; ++i) blk[i] = qrow[i] ? S::load(qrow[i] + d) * S::set1(c) : S::zero();
        S::transpose(blk);
        for (int i = 0; i < W; ++i) S::storea(Qt + (d + i) * QT + r0, blk[i]);
      }
      for (; d < D; ++d)
        for (int i = 0; i < W; ++i) Qt[d * QT + r0 + i] = qrow[i] ? qrow[i][d] * c : 0.0f;
    }
    for (size_t i = 0; i < size_t(D) * QT; ++i) Ot[i] = 0.0f;
    for (int r = 0; r < QT; ++r) m[r] = -INFINITY, l[r] = 0.0f;

    // Keys this tile can see: below the valid length, and (causal) at or before the
    // position of its last query. Query r sits at key position q_pos0 + r.
    const int q_pos0 = p.causal_offset() + q0;
    int kend = p.kv_valid ? std::min(p.kv_len, p.kv_valid[b]) : p.kv_len;
    if (p.causal) kend = std::min(kend, q_pos0 + nq);
    using T = typename E::T;
    constexpr bool kWide = !std::is_same_v<E, KvF32>;

    for (int k0 = 0; k0 < kend; k0 += KT) {
      const int nk = std::min(KT, kend - k0);
      // The next tile's K and V rows, asked for now (prefetch_kv_rows says why).
      if (k0 + KT < kend) prefetch_kv_rows<T>(p, b, hk, k0 + KT, std::min(KT, kend - k0 - KT));

      // The tile as fp32 rows: the cache itself (fp32, plain strides), or (16-bit) its
      // widened copy.
      const float* kbase;
      const float* vbase;
      int64_t ks, vs_;
      if constexpr (kWide) {
        using L = simd::Widen<S, E>;
        for (int j = 0; j < nk; ++j) {
          L::row(p.k.at<T>(b, k0 + j, hk), Kt + size_t(j) * D, D);
          L::row(p.v.at<T>(b, k0 + j, hk), Vt + size_t(j) * D, D);
        }
        kbase = Kt, vbase = Vt, ks = D, vs_ = D;
      } else {
        assert(p.k.stile == 0 && p.v.stile == 0);  // an fp32 cache is read in place
        kbase = p.k.at<T>(b, k0, hk), vbase = p.v.at<T>(b, k0, hk), ks = p.k.st, vs_ = p.v.st;
      }

      if (!p.causal || k0 + nk - 1 <= q_pos0 || W == 1) {
        keys(p, Qt, Ot, St, m, l, kbase, ks, vbase, vs_, k0, nk, 0, q_pos0);
        continue;
      }
      // The diagonal tile: the keys past q_pos0 are visible to only part of the tile.
      // In chunks of W keys, skip the query vectors that see none of the chunk (the
      // upper triangle), which would otherwise be half of this tile's work.
      for (int j = 0; j < nk; j += W) {
        const int bound = k0 + j - q_pos0;  // query lanes below it miss key k0 + j
        const int vs = std::clamp(bound / W, 0, QV - 1);
        keys(p, Qt, Ot, St, m, l, kbase + j * ks, ks, vbase + j * vs_, vs_, k0 + j,
             std::min(W, nk - j), bound > 0 ? vs : 0, q_pos0);
      }
    }

    // O(q0 + r, :) = Ot(:, r) / l(r); a query that saw no key (l = 0) gets zeros.
    for (int r0 = 0; r0 < nq; r0 += W) {
      float* orow[W];
      float inv[W];
      for (int i = 0; i < W; ++i) {
        const int r = r0 + i;
        orow[i] = r < nq ? p.o.at(b, q0 + r, hq) : nullptr;
        inv[i] = r < nq && l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      }
      int d = 0;
      for (; d + W <= D; d += W) {
        V blk[W];
        for (int i = 0; i < W; ++i) blk[i] = S::loada(Ot + (d + i) * QT + r0);
        S::transpose(blk);
        for (int i = 0; i < W; ++i)
          if (orow[i]) S::store(orow[i] + d, blk[i] * S::set1(inv[i]));
      }
      for (; d < D; ++d)
        for (int i = 0; i < W; ++i)
          if (orow[i]) orow[i][d] = Ot[d * QT + r0 + i] * inv[i];
    }
  }
};

}  // namespace
}  // namespace headwise::kernels
