// Shared helpers for the attention tests: random inputs laid out like a fused QKV
// projection, a runner for any line of the kernel list (attention.inc) and path, and the
// error metric.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/simd/half.hpp"

namespace headwise::test {

using kernels::AttnPath;
using kernels::AttnProblem;
using kernels::AttnKernel;

inline std::vector<KvType> all_kv_types() { return {KvType::f32, KvType::f16, KvType::bf16}; }

// Q, K, V as slices of one fused buffer: per (b, t) the row holds
// [Hq·D of Q | Hkv·D of K | Hkv·D of V], so all three are strided, as they are after a
// fused QKV projection. `pad` extra floats per row make the strides unlike any dense one.
struct AttnData {
  int B, Tq, Tk, Hq, Hkv, D;
  int64_t row;  // floats per (b, t) row of the fused buffer
  std::vector<float> qkv;   // (B, max(Tq,Tk), row)
  std::vector<float> out;   // (B, Tq, Hq, D) dense
  std::vector<float> ref;   // same
  std::vector<int32_t> valid;
  // The fused buffer rounded to f16 / bf16 (same layout and strides): a 16-bit KV
  // cache's K and V, made on first use with the scalar conversions of half.hpp.
  std::vector<uint16_t> f16, bf16;
  int T() const { return std::max(Tq, Tk); }

  const void* kv_buffer(KvType t) {
    if (t == KvType::f32) return qkv.data();
    std::vector<uint16_t>& h = t == KvType::f16 ? f16 : bf16;
    if (h.empty()) {
      h.resize(qkv.size());
      for (size_t i = 0; i < qkv.size(); ++i)
        h[i] = t == KvType::f16 ? kernels::f32_to_f16(qkv[i]) : kernels::f32_to_bf16(qkv[i]);
    }
    return h.data();
  }

  AttnData(int B_, int Tq_, int Tk_, int Hq_, int Hkv_, int D_, unsigned seed = 1, int pad = 3,
           float qscale = 2.0f)
      : B(B_), Tq(Tq_), Tk(Tk_), Hq(Hq_), Hkv(Hkv_), D(D_) {
    row = int64_t(Hq + 2 * Hkv) * D + pad;
    qkv.resize(size_t(B) * T() * row);
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T(); ++t) {
        float* r = qkv.data() + (size_t(b) * T() + t) * row;
        for (int64_t i = 0; i < row; ++i) r[i] = u(gen) * (i < int64_t(Hq) * D ? qscale : 1.0f);
      }
    out.assign(size_t(B) * Tq * Hq * D, NAN);
    ref.assign(out.size(), NAN);
  }

  // Queries are the last Tq positions of the buffer (as in decode / chunked prefill).
  // K and V are read as kv elements (the rounded copy for a 16-bit type); Q stays fp32.
  AttnProblem problem(bool causal, float* o, KvType kv = KvType::f32) {
    AttnProblem p;
    const int64_t sb = int64_t(T()) * row;
    const size_t esize = kv_type_bytes(kv);
    const char* base = static_cast<const char*>(kv_buffer(kv));
    p.q = {qkv.data() + int64_t(T() - Tq) * row, sb, row, D};
    p.k = {base + int64_t(Hq) * D * esize, sb, row, D};
    p.v = {base + int64_t(Hq + Hkv) * D * esize, sb, row, D};
    p.kv_type = kv;
    p.o = {o, int64_t(Tq) * Hq * D, int64_t(Hq) * D, D};
    p.batch = B;
    p.q_len = Tq;
    p.kv_len = Tk;
    p.q_heads = Hq;
    p.kv_heads = Hkv;
    p.head_dim = D;
    p.causal = causal;
    p.scale = 1.0f / std::sqrt(float(D));
    p.kv_valid = valid.empty() ? nullptr : valid.data();
    return p;
  }

  // The same problem over a copy of K and V in the session's tiled 16-bit layout
  // (runtime/session_buffers.hpp, kv_view: tiles of kKvTileRows positions, each every
  // head's K rows head-major, then V; Tk rounded up to whole tiles), made on first use.
  std::vector<uint16_t> tiled_f16, tiled_bf16;
  AttnProblem tiled_problem(bool causal, float* o, KvType kv) {
    AttnProblem p = problem(causal, o, kv);
    const int R = kernels::kKvTileRows, tiles = (Tk + R - 1) / R;
    const int64_t st = D, sh = int64_t(R) * D, stile = 2 * int64_t(R) * Hkv * D, sb = tiles * stile;
    std::vector<uint16_t>& t = kv == KvType::f16 ? tiled_f16 : tiled_bf16;
    if (t.empty()) {
      t.assign(size_t(B) * sb, 0xFFFF);  // NaN in the padding: a read past Tk shows
      for (int b = 0; b < B; ++b)
        for (int pos = 0; pos < Tk; ++pos)
          for (int h = 0; h < Hkv; ++h)
            for (int d = 0; d < D; ++d) {
              const int64_t at = b * sb + (pos / R) * stile + (pos % R) * st + h * sh + d;
              t[at] = p.k.at<uint16_t>(b, pos, h)[d];
              t[at + int64_t(R) * Hkv * D] = p.v.at<uint16_t>(b, pos, h)[d];
            }
    }
    p.k = {t.data(), sb, st, sh, stile};
    p.v = {t.data() + int64_t(R) * Hkv * D, sb, st, sh, stile};
    return p;
  }

  float max_abs_v() const {
    float m = 0.0f;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < Tk; ++t)
        for (int i = 0; i < Hkv * D; ++i)
          m = std::max(m, std::fabs(qkv[(size_t(b) * T() + t) * row + (Hq + Hkv) * D + i]));
    return m;
  }
};

// Runs one kernel of the list on p with its own workspace.
// `ahead`: where a decode plan asks for a tiled cache's next tile (default: the plan's,
// the CPU's choice).
inline void run_kernel(const AttnKernel& k, const AttnProblem& p, int threads, AttnPath path,
                       std::optional<kernels::AttnAhead> ahead = std::nullopt) {
  // An amx line's prefill needs the tile state Linux grants on request (amx_usable asks).
  if (k.unit == kernels::AttnUnit::amx && path != AttnPath::decode) {
    ASSERT_TRUE(kernels::amx_usable()) << k.name << " run where AMX is not usable";
  }
  kernels::AttnPlan plan = kernels::plan_attention(k, p, threads, path);
  if (ahead) plan.ahead = *ahead;
  std::unique_ptr<float, decltype(&std::free)> ws(
      static_cast<float*>(std::aligned_alloc(64, (plan.workspace_floats() * 4 + 64) / 64 * 64)),
      &std::free);
  kernels::run_attention(k, p, plan, ws.get());
}

// max |a − b|; NaN anywhere counts as infinite error.
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    m = std::max(m, double(std::fabs(a[i] - b[i])));
  }
  return m;
}

// The stated tolerance of every fused path against the float64 reference:
// max abs error ≤ 1e-5 · max|V|. It holds for 16-bit K/V too, because the reference
// then computes on the same rounded K/V (widening is exact): only the fp32 summation
// order and the exp2 polynomial differ, never the inputs.
constexpr double kRelTol = 1e-5;
// The amx lines' prefill computes its two products in split bf16 (attn_fwd_amx_impl.hpp):
// each P is to within 2⁻¹⁷ (7.6e-6) of itself, so an output can be off by up to about
// 2⁻¹⁷ · max|V| from P alone, plus the scores' 2⁻¹⁷ per term: 2e-5 · max|V| (at most
// 8.8e-6 measured over attention_test's sweep). Their decode is the avx512 line's.
constexpr double kAmxRelTol = 2e-5;
inline double rel_tol(const AttnKernel& k, AttnPath path) {
  return k.unit == kernels::AttnUnit::amx && path != AttnPath::decode ? kAmxRelTol : kRelTol;
}

}  // namespace headwise::test
