// Q4_K and Q6_K weights in row-interleaved panels (the linear registry's repack hook,
// kernels/matmul/linear.hpp): the avx2/avx512 entries of these types read this copy,
// written once at load, instead of the GGUF rows.
//
// Why: on GGUF rows a decode step does, per row and 32-element sub-block, one 8-bit dot
// and then scalar work (6-bit scale/min decoding, scale products, a min-correction
// chain) that costs more than the dot and keeps decode compute-bound at ~26% of the read
// bandwidth. In a panel of 8 output rows one 32-byte vector holds 4 consecutive weights
// of each of the 8 rows (one per 32-bit lane), so a dot (vpdpbusd, or vpmaddubsw +
// vpmaddwd) against 4 activation bytes broadcast to every lane advances 8 rows at once,
// and every scale step after it (int → float, scale multiply, multiply-add, the mins)
// is one vector instruction for 8 rows. The 6-bit scales and mins are decoded at repack
// time into bytes (one vpmovzxbd loads 8 rows' scale of a sub-block); d and dmin stay
// f16 (one vcvtph2ps for 8 rows). Per panel and 256-element super-block:
//   Q4_K (1184 bytes, 8 rows' GGUF blocks are 1152):
//     d[8] f16, dmin[8] f16, sc[8 sub-blocks][8 rows] u8, m[8][8] u8,
//     q[4 pairs c][8 groups i][8 rows][4 bytes]: byte t of row r = GGUF byte 32c + 4i + t,
//       i.e. sub-block 2c's element 4i + t in the low nibble, sub-block 2c + 1's in the high
//   Q6_K (1680 bytes, as 8 rows' GGUF blocks):
//     d[8] f16, sc[16 sub-blocks of 16][8 rows] s8,
//     lo[4 pairs][8 groups][8 rows][4 bytes]: low 4 bits of q, block 2p in the low nibble,
//       2p + 1 in the high (block = 32 elements, one activation block)
//     hi[2 quads][8 groups][8 rows][4 bytes]: top 2 bits of q, block 4u + k in bits 2k, 2k+1
// A last panel of fewer than 8 rows is padded with zero rows (d = 0: they add nothing,
// and no y is written past N).
//
// Products: a tile of the 8-row panel × RA input rows (RA = 1 in decode; 4 with
// AVX-512VL's 32 registers, 2 with AVX2's 16 in prefill) so every unpacked weight vector
// feeds RA dots; a thread takes whole panels. Integer parts stay exact: Q4_K's
// sc·Σq·x ≤ 63·32·15·127 and Q6_K's sc·(Σq·x − 32·Σx) per half are int32 (vpmulld),
// one conversion per activation block; the offsets (Q6_K's −32·Σx per half) and Q4_K's
// x.d·Σx (for the mins) are computed once per input row into scratch next to its int8 blocks.
// Include only from a *_avx2.cpp / *_avx512.cpp file.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/matmul/linear.hpp"
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {
namespace {

constexpr int kPanelKRows = 8;  // output rows per panel: one per 32-bit lane of a ymm

inline __m256i broadcast4(const int8_t* p) {  // 4 activation bytes into every 32-bit lane
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __m256i load8_u8_epi32(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline __m256i load8_s8_epi32(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load8_f16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

struct PanelQ4K {
  using B = BlockQ4_K;
  static constexpr WType kType = WType::q4_k;
  static constexpr WeightType kRegType = WeightType::q4_k;
  static constexpr int kHead = 160;  // d, dmin, sc, m
  static constexpr int kBytes = kHead + kPanelKRows * kQKK / 2;
  // Per activation block: x.d·Σx (float) for the mins; 4 bytes unused.
  static void aux(const BlockQ8A& x, uint8_t* out) {
    const float xs = x.d * float(x.sum[0] + x.sum[1]);
    std::memcpy(out, &xs, 4);
    std::memset(out + 4, 0, 4);
  }
  // rows[r]: row r's super-block, or null for a padding row. out: kBytes, zeroed.
  static void pack(const B* const* rows, uint8_t* out) {
    auto* d = reinterpret_cast<uint16_t*>(out);
    uint8_t *sc = out + 32, *mn = out + 96, *q = out + kHead;
    for (int r = 0; r < kPanelKRows; ++r) {
      if (!rows[r]) continue;
      const B& b = *rows[r];
      d[r] = b.d;
      d[8 + r] = b.dmin;
      for (int j = 0; j < 8; ++j) {
        int s, m;
        k_scale_min(b.scales, j, &s, &m);
        sc[8 * j + r] = uint8_t(s);
        mn[8 * j + r] = uint8_t(m);
      }
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 8; ++i) std::memcpy(q + ((c * 8 + i) * 8 + r) * 4, b.q + 32 * c + 4 * i, 4);
    }
  }

  // acc[a] += the panel's 8 rows · input a over nsb super-blocks (x[a]: its blocks,
  // ax[a]: its aux bytes, both from the panel's first super-block on).
  template <class D, int RA>
  static void tile(const uint8_t* p, int64_t nsb, const BlockQ8A* const* x, const uint8_t* const* ax, __m256* acc) {
    constexpr int S = RA == 1 ? 2 : 1;  // independent dot chains per sub-block (latency in decode)
    const __m256i low4 = _mm256_set1_epi8(0xF);
    for (int64_t sb = 0; sb < nsb; ++sb, p += kBytes) {
      for (int o = 0; o < kHead; o += 64) ahead(p + o);
      const __m256 d8 = load8_f16(p), dmin8 = load8_f16(p + 16);
      const uint8_t *sc = p + 32, *mn = p + 96, *q = p + kHead;
      // − dmin·Σ_j m_j·x_j.d·Σx_j
      __m256 macc[RA];
      for (int a = 0; a < RA; ++a) macc[a] = _mm256_setzero_ps();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m256 mf = _mm256_cvtepi32_ps(load8_u8_epi32(mn + 8 * j));
        for (int a = 0; a < RA; ++a) {
          float xs;
          std::memcpy(&xs, ax[a] + (sb * 8 + j) * 8, 4);
          macc[a] = _mm256_fmadd_ps(mf, _mm256_set1_ps(xs), macc[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = _mm256_fnmadd_ps(dmin8, macc[a], acc[a]);
      // + d·Σ_j x_j.d·sc_j·Σ q·x
      __m256 accsb[RA];
      for (int a = 0; a < RA; ++a) accsb[a] = _mm256_setzero_ps();
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const uint8_t* qc = q + c * 256;
        for (int o = 0; o < 256; o += 64) ahead(qc + o);
        __m256i dlo[RA][S], dhi[RA][S];
        for (int a = 0; a < RA; ++a)
          for (int s = 0; s < S; ++s) dlo[a][s] = dhi[a][s] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          const __m256i v = load32(qc + 32 * i);
          const __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
            dlo[a][i % S] = D::dot_acc(dlo[a][i % S], lo, broadcast4(xb[0].q + 4 * i));
            dhi[a][i % S] = D::dot_acc(dhi[a][i % S], hi, broadcast4(xb[1].q + 4 * i));
          }
        }
        const __m256i sc0 = load8_u8_epi32(sc + 16 * c), sc1 = load8_u8_epi32(sc + 16 * c + 8);
        for (int a = 0; a < RA; ++a) {
          const BlockQ8A* xb = x[a] + sb * 8 + 2 * c;
          __m256i l = dlo[a][0], h = dhi[a][0];
          if constexpr (S == 2) l = _mm256_add_epi32(l, dlo[a][1]), h = _mm256_add_epi32(h, dhi[a][1]);
          accsb[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(l, sc0)), _mm256_set1_ps(xb[0].d), accsb[a]);
          accsb[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(h, sc1)), _mm256_set1_ps(xb[1].d), accsb[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = _mm256_fmadd_ps(accsb[a], d8, acc[a]);
    }
  }
};

struct PanelQ6K {
  using B = BlockQ6_K;
  static constexpr WType kType = WType::q6_k;
  static constexpr WeightType kRegType = WeightType::q6_k;
  static constexpr int kHead = 144;  // d, sc
  static constexpr int kBytes = kHead + kPanelKRows * kQKK * 6 / 8;
  // Per activation block: −32·Σx of each half (int32), the dots' starting values.
  static void aux(const BlockQ8A& x, uint8_t* out) {
    const int32_t o[2] = {-32 * x.sum[0], -32 * x.sum[1]};
    std::memcpy(out, o, 8);
  }
  // Element e of a Q6_K block (q6_k_scalar.cpp's layout).
  static int q_at(const B& b, int e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t lo = b.ql[64 * h + 32 * (g & 1) + l];
    return (g < 2 ? (lo & 0xF) : (lo >> 4)) | (((b.qh[32 * h + l] >> (2 * g)) & 3) << 4);
  }
  static void pack(const B* const* rows, uint8_t* out) {
    auto* d = reinterpret_cast<uint16_t*>(out);
    auto* sc = reinterpret_cast<int8_t*>(out + 16);
    uint8_t *lo = out + kHead, *hi = lo + 1024;
    for (int r = 0; r < kPanelKRows; ++r) {
      if (!rows[r]) continue;
      const B& b = *rows[r];
      d[r] = b.d;
      for (int j = 0; j < 16; ++j) sc[8 * j + r] = b.scales[j];
      for (int e = 0; e < kQKK; ++e) {
        const int q = q_at(b, e), j = e / 32, i = (e % 32) / 4, t = e % 4;
        lo[((j / 2 * 8 + i) * 8 + r) * 4 + t] |= uint8_t((q & 0xF) << (4 * (j & 1)));
        hi[((j / 4 * 8 + i) * 8 + r) * 4 + t] |= uint8_t((q >> 4) << (2 * (j % 4)));
      }
    }
  }

  template <class D, int RA>
  static void tile(const uint8_t* p, int64_t nsb, const BlockQ8A* const* x, const uint8_t* const* ax, __m256* acc) {
    const __m256i low4 = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
    for (int64_t sb = 0; sb < nsb; ++sb, p += kBytes) {
      for (int o = 0; o < kHead; o += 64) ahead(p + o);
      const __m256 d8 = load8_f16(p);
      const int8_t* sc = reinterpret_cast<const int8_t*>(p + 16);
      const uint8_t *lo = p + kHead, *hi = lo + 1024;
      __m256 accsb[RA];
      for (int a = 0; a < RA; ++a) accsb[a] = _mm256_setzero_ps();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const uint8_t *lj = lo + (j / 2) * 256, *hj = hi + (j / 4) * 256;
        if ((j & 1) == 0)
          for (int o = 0; o < 256; o += 64) ahead(lj + o);
        if ((j & 3) == 0)
          for (int o = 0; o < 256; o += 64) ahead(hj + o);
        __m256i dlo[RA], dhi[RA];
        for (int a = 0; a < RA; ++a) {
          int32_t o[2];
          std::memcpy(o, ax[a] + (sb * 8 + j) * 8, 8);
          dlo[a] = _mm256_set1_epi32(o[0]);
          dhi[a] = _mm256_set1_epi32(o[1]);
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          const __m256i l = load32(lj + 32 * i), h = load32(hj + 32 * i);
          const __m256i l4 = _mm256_and_si256(j & 1 ? _mm256_srli_epi16(l, 4) : l, low4);
          const int k = j % 4;  // bits 2k, 2k+1 → bits 4, 5
          const __m256i hs = k == 0 ? _mm256_slli_epi16(h, 4) : k == 1 ? _mm256_slli_epi16(h, 2)
                           : k == 2 ? h : _mm256_srli_epi16(h, 2);
          const __m256i qv = _mm256_or_si256(l4, _mm256_and_si256(hs, bits45));
          for (int a = 0; a < RA; ++a) {
            const BlockQ8A& xb = x[a][sb * 8 + j];
            if (i < 4) dlo[a] = D::dot_acc(dlo[a], qv, broadcast4(xb.q + 4 * i));
            else dhi[a] = D::dot_acc(dhi[a], qv, broadcast4(xb.q + 4 * i));
          }
        }
        const __m256i s0 = load8_s8_epi32(sc + 16 * j), s1 = load8_s8_epi32(sc + 16 * j + 8);
        for (int a = 0; a < RA; ++a) {
          const __m256i s = _mm256_add_epi32(_mm256_mullo_epi32(dlo[a], s0), _mm256_mullo_epi32(dhi[a], s1));
          accsb[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(x[a][sb * 8 + j].d), accsb[a]);
        }
      }
      for (int a = 0; a < RA; ++a) acc[a] = _mm256_fmadd_ps(accsb[a], d8, acc[a]);
    }
  }
};

// The registry entry of panel type P on dot D: RA input rows per prefill tile.
// kVnniBf16: the entry is an avx512 one (declines without AVX512-VNNI/BF16, as QuantLinear).
template <class P, class D, int RA, bool kVnniBf16>
struct PanelKLinear {
  static constexpr int kAux = 8;  // aux bytes per activation block
  // Input rows per pass over a thread's panels: 64 rows of K ≤ 2048 (their int8 blocks and
  // aux bytes, 160 KiB) stay in L2 while the panels stream past them once per pass.
  static constexpr int kChunkRows = 64;
  static int64_t panels(const PackedWeights& w) { return (int64_t(w.N) + kPanelKRows - 1) / kPanelKRows; }
  static size_t panel_bytes(const PackedWeights& w) { return size_t(w.K / kQKK) * P::kBytes; }
  static bool supports(const PackedWeights& w) {
    if (kVnniBf16 && !cpu_has_avx512_vnni_bf16()) return false;
    return w.type == P::kRegType && w.data && w.NB == 1 && w.K % kQKK == 0 &&
           w.row_bytes == int64_t(w.K / kQKK) * int64_t(sizeof(typename P::B));
  }
  static size_t repacked_bytes(const PackedWeights& w) { return size_t(panels(w)) * panel_bytes(w); }
  // Panels n0/8 .. ⌈n1/8⌉ − 1 (n0 a multiple of 8; rows ≥ n1 of the last one: only when n1 = N).
  static void repack(const PackedWeights& w, int64_t n0, int64_t n1, void* dst) {
    using B = typename P::B;
    const int64_t nsb = w.K / kQKK;
    for (int64_t pn = n0 / kPanelKRows; pn * kPanelKRows < n1; ++pn) {
      uint8_t* out = static_cast<uint8_t*>(dst) + size_t(pn) * panel_bytes(w);
      std::memset(out, 0, panel_bytes(w));
      for (int64_t sb = 0; sb < nsb; ++sb) {
        const B* rows[kPanelKRows];
        for (int r = 0; r < kPanelKRows; ++r) {
          const int64_t n = pn * kPanelKRows + r;
          rows[r] = n < n1 ? reinterpret_cast<const B*>(static_cast<const uint8_t*>(w.data) + size_t(n) * w.row_bytes) + sb
                           : nullptr;
        }
        P::pack(rows, out + size_t(sb) * P::kBytes);
      }
    }
  }
  static size_t act_bytes(int K) { return (size_t(K / kQK) * sizeof(BlockQ8A) + 63) / 64 * 64; }
  static size_t aux_bytes(int K) { return (size_t(K / kQK) * kAux + 63) / 64 * 64; }
  static size_t scratch_bytes(const PackedWeights& w, int rows) { return size_t(rows) * (act_bytes(w.K) + aux_bytes(w.K)); }

  // y rows m .. m + R − 1, outputs of panel pn.
  template <int R>
  static void tile(const PackedWeights& w, int64_t pn, const uint8_t* xa, const uint8_t* xx, int m,
                   const float* bias, float* y, int64_t ldy) {
    const size_t ab = act_bytes(w.K), xb = aux_bytes(w.K);
    const BlockQ8A* x[R];
    const uint8_t* ax[R];
    for (int a = 0; a < R; ++a) {
      x[a] = reinterpret_cast<const BlockQ8A*>(xa + size_t(m + a) * ab);
      ax[a] = xx + size_t(m + a) * xb;
    }
    __m256 acc[R];
    for (int a = 0; a < R; ++a) acc[a] = _mm256_setzero_ps();
    P::template tile<D, R>(static_cast<const uint8_t*>(w.data) + size_t(pn) * panel_bytes(w), w.K / kQKK, x, ax, acc);
    const int64_t n = pn * kPanelKRows;
    const int valid = int(std::min<int64_t>(kPanelKRows, w.N - n));
    const __m256 bv = bias && valid == kPanelKRows ? _mm256_loadu_ps(bias + n) : _mm256_setzero_ps();
    for (int a = 0; a < R; ++a) {
      float* yr = y + (m + a) * ldy + n;
      if (valid == kPanelKRows) {
        _mm256_storeu_ps(yr, _mm256_add_ps(acc[a], bv));
      } else {
        alignas(32) float t[kPanelKRows];
        _mm256_store_ps(t, acc[a]);
        for (int r = 0; r < valid; ++r) yr[r] = t[r] + (bias ? bias[n + r] : 0.0f);
      }
    }
  }

  static void run(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y,
                  int64_t ldy, int rows, int threads, void* scratch) {
    auto* xa = static_cast<uint8_t*>(scratch);
    uint8_t* xx = xa + size_t(rows) * act_bytes(w.K);
    const size_t ab = act_bytes(w.K), xb = aux_bytes(w.K);
    const int64_t np = panels(w);
    const int nt = int(std::max<int64_t>(1, std::min<int64_t>(threads, std::max<int64_t>(np, rows))));
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
#pragma omp for schedule(static)
      for (int r = 0; r < rows; ++r) {
        prepare_activations(ActKind::q8a, x + r * ldx, xa + r * ab, w.K);
        const auto* blocks = reinterpret_cast<const BlockQ8A*>(xa + r * ab);
        for (int b = 0; b < w.K / kQK; ++b) P::aux(blocks[b], xx + r * xb + b * kAux);
      }
      const int64_t p0 = np * t / n, p1 = np * (t + 1) / n;
      for (int m0 = 0; m0 < rows; m0 += kChunkRows) {
        const int m1 = std::min(rows, m0 + kChunkRows);
        for (int64_t pn = p0; pn < p1; ++pn) {
          int m = m0;
          for (; m + RA <= m1; m += RA) tile<RA>(w, pn, xa, xx, m, bias, y, ldy);
          if (m1 - m >= 2 && RA > 2) tile<2>(w, pn, xa, xx, m, bias, y, ldy), m += 2;
          if (m < m1) tile<1>(w, pn, xa, xx, m, bias, y, ldy);
        }
      }
    }
  }
  static constexpr LinearKernelImpl impl(const char* name) {
    return {name, 0, supports, scratch_bytes, run, repacked_bytes, repack, kPanelKRows};
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
