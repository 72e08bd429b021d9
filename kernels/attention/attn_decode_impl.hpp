// The decode attention body (few queries, long KV): one task covers one kv head and
// one chunk of its keys for every query row that reads that kv head, and leaves a
// partial softmax state (m, l, acc) the driver merges across chunks ("split-KV", as in
// FlashDecoding). Decode is bound by reading K and V, so each K/V row is loaded from
// memory once per task and reused from cache by every query row of the group (GQA).
//
// Templated on the vector vocabulary S and the key block KT; instantiated once per ISA.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/attention/attention.hpp"

namespace headwise::kernels {
namespace {

template <class S, int KT>
struct AttnDecode {
  using V = typename S::V;
  static constexpr int W = S::W;

  static void run(const AttnProblem& p, int b, int hkv, int k0, int k1, float* part,
                  float* scratch) {
    const int D = p.head_dim, G = p.group(), R = p.q_len * G;
    const int Dp = decode_row_floats(D);
    const int64_t P = D + 2;            // partial row: m, l, acc(D)
    float* Qs = scratch;                // (R, Dp) query rows · scale · log2(e), zero padded
    float* sc = Qs + size_t(R) * Dp;    // (R, KT) scores then probabilities

    const float c = p.scale * 1.4426950408889634f;
    const int valid = p.kv_valid ? std::min(p.kv_len, p.kv_valid[b]) : p.kv_len;
    const int off = p.causal_offset();
    for (int r = 0; r < R; ++r) {
      const int t = r / G, hq = hkv * G + r % G;
      const float* q = p.q.at(b, t, hq);
      float* qs = Qs + size_t(r) * Dp;
      for (int d = 0; d < D; ++d) qs[d] = q[d] * c;
      for (int d = D; d < Dp; ++d) qs[d] = 0.0f;
      float* pr = part + r * P;
      pr[0] = -INFINITY;
      pr[1] = 0.0f;
      std::fill(pr + 2, pr + 2 + D, 0.0f);
    }
    // Row r (query position t) sees keys below end(r).
    auto end_of = [&](int r) { return p.causal ? std::min(valid, off + r / G + 1) : valid; };
    const int kstop = std::min(k1, end_of(R - 1));  // the last row sees the most keys

    for (int kb = k0; kb < kstop; kb += KT) {
      const int nk = std::min(KT, kstop - kb);
      const float* kbase = p.k.at(b, kb, hkv);
      const float* vbase = p.v.at(b, kb, hkv);

      // 1) scores: sc(r, j) = Qs(r) · K(kb + j), W keys at a time finished by one
      //    lane-wise horizontal sum; −inf where row r may not see key kb + j.
      for (int r = 0; r < R; ++r) {
        const float* qs = Qs + size_t(r) * Dp;
        float* s = sc + size_t(r) * KT;
        int j = 0;
        if (D % W == 0) {
          for (; j + W <= nk; j += W) {
            V acc[W];
            for (int i = 0; i < W; ++i) acc[i] = S::zero();
            for (int d = 0; d < D; d += W) {
              const V q = S::loada(qs + d);
              for (int i = 0; i < W; ++i)
                acc[i] = S::fma(q, S::load(kbase + (j + i) * p.k.st + d), acc[i]);
            }
            S::store(s + j, S::hsum_lanes(acc));
          }
        }
        for (; j < nk; ++j) {
          const float* kr = kbase + j * p.k.st;
          V acc = S::zero();
          int d = 0;
          for (; d + W <= D; d += W) acc = S::fma(S::loada(qs + d), S::load(kr + d), acc);
          if (d < D) acc = S::fma(S::loada(qs + d), S::load_partial(kr + d, D - d), acc);
          s[j] = S::hsum(acc);
        }
        const int e = end_of(r) - kb;  // keys j >= e are hidden from row r
        for (int jj = std::max(e, 0); jj < nk; ++jj) s[jj] = -INFINITY;
      }

      // 2) online softmax per row, then acc = α·acc + Σ_j P(j)·V(j)
      for (int r = 0; r < R; ++r) {
        float* s = sc + size_t(r) * KT;
        float* pr = part + r * P;
        float mx = pr[0];
        for (int j = 0; j < nk; ++j) mx = std::max(mx, s[j]);
        if (mx == -INFINITY) continue;  // nothing visible yet: state unchanged
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
        const float alpha = pr[0] == -INFINITY ? 0.0f : std::exp2(pr[0] - mx);
        pr[0] = mx;
        pr[1] = alpha * pr[1] + S::hsum(sum) + tail;

        float* acc = pr + 2;
        const V va = S::set1(alpha);
        int d = 0;
        // 8 vectors of features stay in registers while the keys stream past.
        constexpr int NV = 8;
        for (; d + NV * W <= D; d += NV * W) {
          V a[NV];
          for (int u = 0; u < NV; ++u) a[u] = S::load(acc + d + u * W) * va;
          for (int jj = 0; jj < nk; ++jj) {
            const V pj = S::set1(s[jj]);
            const float* vr = vbase + jj * p.v.st + d;
            for (int u = 0; u < NV; ++u) a[u] = S::fma(pj, S::load(vr + u * W), a[u]);
          }
          for (int u = 0; u < NV; ++u) S::store(acc + d + u * W, a[u]);
        }
        for (; d + W <= D; d += W) {
          V a = S::load(acc + d) * va;
          for (int jj = 0; jj < nk; ++jj)
            a = S::fma(S::set1(s[jj]), S::load(vbase + jj * p.v.st + d), a);
          S::store(acc + d, a);
        }
        for (; d < D; ++d) {
          float a = acc[d] * alpha;
          for (int jj = 0; jj < nk; ++jj) a += s[jj] * vbase[jj * p.v.st + d];
          acc[d] = a;
        }
      }
    }
  }
};

}  // namespace
}  // namespace headwise::kernels
