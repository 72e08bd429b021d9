// The fused (flash-style) prefill attention body, templated on the vector vocabulary
// S (simd::F32<arch> or simd::Scalar) and the tile shape. Each ISA's translation unit
// instantiates it once (attn_fwd_f32_<isa>.cpp).
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

#include "kernels/attention/attention.hpp"

namespace headwise::kernels {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

// QV query vectors per tile; KT keys per tile; register blocks of NKR keys (Q·Kᵀ) or NDR
// features (P·V) by QR query vectors. A tile wider than a register block (QV > QR) lets
// ISAs with few registers (AVX2: 16) still reuse each K/V tile for 64 queries.
template <class S, int QV, int KT, int NKR, int NDR, int QR = QV>
struct AttnFwd {
  static_assert(QV % QR == 0, "a tile is a whole number of register blocks");
  using V = typename S::V;
  static constexpr int W = S::W;
  static constexpr int QT = QV * W;  // queries per tile

  // St(i, :) = Σ_d K(key_i, d) · Qt(d, :) for NK keys and the QR query vectors at Qt/St.
  template <int NK>
  static inline void qk_block(const float* Qt, int D, const float* const* krow, float* St) {
    V acc[NK][QR];
    for (int i = 0; i < NK; ++i)
      for (int v = 0; v < QR; ++v) acc[i][v] = S::zero();
    for (int d = 0; d < D; ++d) {
      V q[QR];
      for (int v = 0; v < QR; ++v) q[v] = S::loada(Qt + d * QT + v * W);
      for (int i = 0; i < NK; ++i) {
        const V kb = S::set1(krow[i][d]);
        for (int v = 0; v < QR; ++v) acc[i][v] = S::fma(kb, q[v], acc[i][v]);
      }
    }
    for (int i = 0; i < NK; ++i)
      for (int v = 0; v < QR; ++v) S::storea(St + i * QT + v * W, acc[i][v]);
  }

  // Ot(d0 .. d0+ND−1, :) = α ⊙ Ot(d, :) + Σ_{j<nk} V(j, d) · St(j, :)
  // v0 points at V(k0, d0); rows are vstride floats apart. (Copying the V tile to
  // contiguous rows first measured ~10% slower: the copy is a separate, load-bound
  // phase, while here the strided loads overlap the FMAs.)
  template <int ND>
  static inline void pv_block(float* Ot, const float* St, const float* v0, int64_t vstride,
                              int nk, const V* alpha) {
    V acc[ND][QR];
    for (int i = 0; i < ND; ++i)
      for (int v = 0; v < QR; ++v) acc[i][v] = S::loada(Ot + i * QT + v * W) * alpha[v];
    for (int j = 0; j < nk; ++j) {
      V pj[QR];
      for (int v = 0; v < QR; ++v) pj[v] = S::loada(St + j * QT + v * W);
      const float* vj = v0 + j * vstride;
      for (int i = 0; i < ND; ++i) {
        const V vb = S::set1(vj[i]);
        for (int v = 0; v < QR; ++v) acc[i][v] = S::fma(vb, pj[v], acc[i][v]);
      }
    }
    for (int i = 0; i < ND; ++i)
      for (int v = 0; v < QR; ++v) S::storea(Ot + i * QT + v * W, acc[i][v]);
  }

  template <int NK>
  static inline void qk_tail(int nk, const float* Qt, int D, const float* const* krow,
                             float* St) {
    if constexpr (NK > 0) {
      if (nk == NK) return qk_block<NK>(Qt, D, krow, St);
      return qk_tail<NK - 1>(nk, Qt, D, krow, St);
    }
  }

  template <int ND>
  static inline void pv_tail(int nd, float* Ot, const float* St, const float* v0,
                             int64_t vstride, int nk, const V* alpha) {
    if constexpr (ND > 0) {
      if (nd == ND) return pv_block<ND>(Ot, St, v0, vstride, nk, alpha);
      return pv_tail<ND - 1>(nd, Ot, St, v0, vstride, nk, alpha);
    }
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

    // Qt(d, r) = Q(q0 + r, d) · scale · log2(e): the softmax then runs in base 2.
    const float c = p.scale * kLog2e;
    for (int r = 0; r < QT; ++r) {
      if (r < nq) {
        const float* q = p.q.at(b, q0 + r, hq);
        for (int d = 0; d < D; ++d) Qt[d * QT + r] = q[d] * c;
      } else {
        for (int d = 0; d < D; ++d) Qt[d * QT + r] = 0.0f;
      }
    }
    for (size_t i = 0; i < size_t(D) * QT; ++i) Ot[i] = 0.0f;
    for (int r = 0; r < QT; ++r) m[r] = -INFINITY, l[r] = 0.0f;

    // Keys this tile can see: below the valid length, and (causal) at or before the
    // position of its last query. Query r sits at key position off + q0 + r.
    const int off = p.causal_offset();
    int kend = p.kv_valid ? std::min(p.kv_len, p.kv_valid[b]) : p.kv_len;
    if (p.causal) kend = std::min(kend, off + q0 + nq);
    const int64_t kst = p.k.st, vst = p.v.st;

    for (int k0 = 0; k0 < kend; k0 += KT) {
      const int nk = std::min(KT, kend - k0);
      const float* kbase = p.k.at(b, k0, hk);
      const float* vbase = p.v.at(b, k0, hk);

      // 0) ask for the next tile's K and V rows now (into L2): a head's K and V exceed
      //    L2 for long sequences, and every query tile streams them again.
      if (k0 + KT < kend) {
        const int nn = std::min(KT, kend - k0 - KT);
        for (int j = 0; j < nn; ++j)
          for (int d = 0; d < D; d += 16) {
            __builtin_prefetch(kbase + (KT + j) * kst + d, 0, 2);
            __builtin_prefetch(vbase + (KT + j) * vst + d, 0, 2);
          }
      }

      // 1) scores: St(j, :) = K(k0 + j) · Qt
      const float* krow[NKR];
      int j = 0;
      for (; j + NKR <= nk; j += NKR) {
        for (int i = 0; i < NKR; ++i) krow[i] = kbase + (j + i) * kst;
        for (int r = 0; r < QV; r += QR) qk_block<NKR>(Qt + r * W, D, krow, St + j * QT + r * W);
      }
      if (j < nk) {
        for (int i = 0; i < nk - j; ++i) krow[i] = kbase + (j + i) * kst;
        for (int r = 0; r < QV; r += QR)
          qk_tail<NKR - 1>(nk - j, Qt + r * W, D, krow, St + j * QT + r * W);
      }

      // 2) causal mask, only on tiles that reach past the first query's position:
      //    key k0 + j is hidden from query r when k0 + j > off + q0 + r.
      if (p.causal && k0 + nk - 1 > off + q0) {
        for (int jj = 0; jj < nk; ++jj) {
          const int bound = k0 + jj - off - q0;  // query lanes r < bound are hidden
          for (int v = 0; v < QV && v * W < bound; ++v) {
            float* s = St + jj * QT + v * W;
            S::storea(s, S::mask_lt(S::loada(s), v * W, bound));
          }
        }
      }

      // 3) online softmax, per query lane:
      //    m' = max(m, max_j S(j)); P(j) = 2^(S(j) − m'); α = 2^(m − m'); l = α·l + Σ_j P(j)
      V alpha[QV];
      for (int v = 0; v < QV; ++v) {
        V mx = S::loada(m + v * W);
        for (int jj = 0; jj < nk; ++jj) mx = S::max(mx, S::loada(St + jj * QT + v * W));
        // A lane that has seen no visible key yet keeps m' = −inf; a finite reference
        // (−3e38) keeps 2^(−inf − (−inf)) from making a NaN: its P and α are all 0.
        const V mref = S::max(mx, S::set1(-3.0e38f));
        V sum = S::zero();
        for (int jj = 0; jj < nk; ++jj) {
          float* s = St + jj * QT + v * W;
          const V pj = S::exp2(S::loada(s) - mref);
          S::storea(s, pj);
          sum = sum + pj;
        }
        alpha[v] = S::exp2(S::loada(m + v * W) - mref);
        S::storea(l + v * W, S::fma(alpha[v], S::loada(l + v * W), sum));
        S::storea(m + v * W, mx);
      }

      // 4) Ot = α ⊙ Ot + Vᵀ · P, blocked over NDR features
      //    A short remainder (D = 128 = 21·6 + 2) would run with too few accumulators to
      //    hide the FMA latency, so the last full block and it are split evenly (… + 4 + 4).
      const int full = D % NDR != 0 && D % NDR < NDR / 2 && D >= NDR ? D / NDR - 1 : D / NDR;
      for (int r = 0; r < QV; r += QR) {
        float* Or = Ot + r * W;
        const float* Sr = St + r * W;
        int d = 0;
        for (; d < full * NDR; d += NDR) pv_block<NDR>(Or + d * QT, Sr, vbase + d, vst, nk, alpha + r);
        const int left = D - d;
        if (left > NDR) {
          const int half = left / 2;
          pv_tail<NDR - 1>(half, Or + d * QT, Sr, vbase + d, vst, nk, alpha + r);
          d += half;
        }
        if (d < D) pv_tail<NDR - 1>(D - d, Or + d * QT, Sr, vbase + d, vst, nk, alpha + r);
      }
    }

    // O(q0 + r, :) = Ot(:, r) / l(r); a query that saw no key (l = 0) gets zeros.
    for (int r = 0; r < nq; ++r) {
      float* o = p.o.at(b, q0 + r, hq);
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      for (int dd = 0; dd < D; ++dd) o[dd] = Ot[dd * QT + r] * inv;
    }
  }
};

}  // namespace
}  // namespace headwise::kernels
