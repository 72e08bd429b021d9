// LinearKernelImpl::dequant_bf16 on every registry line that has it (the repacked panel
// types) and that this CPU runs: rows dequantized from the kernel's own layout equal the
// type's reference dequantize() of the stored rows (fp32 products of f16 scales and
// small integers) rounded by f32_to_bf16, bit for bit, for ranges that start and end on
// panel edges and a last panel of fewer rows; nothing is written outside the rows asked
// for (the gap between rows of ldo > K and the rows past n1 keep their 0xFFFF, a NaN).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/matmul/linear.hpp"
#include "kernels/quant/quant.hpp"
#include "kernels/simd/half.hpp"

namespace headwise::kernels {
namespace {

quant::WType wtype_of(WeightType t) {
  switch (t) {
    case WeightType::q8_0: return quant::WType::q8_0;
    case WeightType::q4_0: return quant::WType::q4_0;
    case WeightType::q2_k: return quant::WType::q2_k;
    case WeightType::q3_k: return quant::WType::q3_k;
    case WeightType::q4_k: return quant::WType::q4_k;
    case WeightType::q5_k: return quant::WType::q5_k;
    case WeightType::q6_k: return quant::WType::q6_k;
    case WeightType::iq4_xs: return quant::WType::iq4_xs;
    default: return quant::WType::f32;
  }
}

// N seeded rows of K values quantized as `ti` (stored), and the line's repacked copy of
// them (w: as stored, pw: the copy). False when the line does not support the shape.
struct Repacked {
  std::vector<uint8_t> stored, copy;
  size_t rb = 0;
  PackedWeights w, pw;
};
bool repacked(const LinearKernel& lk, const quant::TypeInfo& ti, int K, int N, uint32_t seed, Repacked* r) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  r->rb = quant::row_bytes(ti, K);
  r->stored.resize(r->rb * N);
  std::vector<float> row(K);
  for (int n = 0; n < N; ++n) {
    for (float& v : row) v = nd(g);
    ti.quantize(row.data(), r->stored.data() + r->rb * n, K);
  }
  PackedWeights& w = r->w;
  w.type = lk.type, w.data = r->stored.data(), w.K = w.Kp = K, w.N = N;
  w.KB = ti.block, w.NB = 1, w.row_bytes = int64_t(r->rb);
  if (!lk.impl->supports(w)) return false;
  r->copy.assign(lk.impl->repacked_bytes(w) + 64, 0);
  for (int64_t n0 = 0; n0 < N; n0 += lk.impl->repack_rows)
    lk.impl->repack(w, n0, std::min<int64_t>(N, n0 + lk.impl->repack_rows), r->copy.data());
  r->pw = w;
  r->pw.data = r->copy.data();
  r->pw.repacked = true;
  return true;
}

TEST(DequantRows, PanelsDequantizeToTheStoredRowsValues) {
  int checked = 0;
  for (const LinearKernel& lk : linear_kernels()) {
    if (!lk.impl->dequant_bf16 || !may_use(lk.isa)) continue;
    const quant::TypeInfo* ti = quant::type_info(wtype_of(lk.type));
    ASSERT_NE(ti, nullptr) << lk.symbol;
    for (int K : {ti->block, 7 * ti->block}) {
      for (int N : {5, 8, 29}) {
        Repacked r;
        if (!repacked(lk, *ti, K, N, uint32_t(K * 31 + N), &r)) continue;
        const std::vector<uint8_t>& stored = r.stored;
        const size_t rb = r.rb;
        const PackedWeights& pw = r.pw;
        std::vector<float> row(K);
        const int64_t ldo = K + 3, R = lk.impl->repack_rows;
        for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, N}, {0, std::min<int64_t>(R, N)}, {R, N}}) {
          if (n0 >= n1) continue;
          std::vector<uint16_t> out(size_t(N) * ldo, 0xFFFF);
          lk.impl->dequant_bf16(pw, n0, n1, out.data(), ldo);
          for (int64_t n = n0; n < n1; ++n) {
            const uint16_t* o = out.data() + (n - n0) * ldo;
            ti->dequantize(stored.data() + rb * n, row.data(), K);
            for (int k = 0; k < K; ++k)
              ASSERT_EQ(o[k], f32_to_bf16(row[k])) << lk.symbol << " K " << K << " N " << N << " row " << n << " of ["
                                                    << n0 << ", " << n1 << ") element " << k << " (" << row[k] << ")";
            for (int64_t k = K; k < ldo && n + 1 < n1; ++k) ASSERT_EQ(o[k], 0xFFFF) << "wrote between rows";
          }
          for (size_t i = size_t(n1 - n0) * ldo; i < out.size(); ++i)
            ASSERT_EQ(out[i], 0xFFFF) << lk.symbol << ": wrote past row " << n1;
        }
        ++checked;
      }
    }
  }
  if (!checked) GTEST_SKIP() << "no registry line with dequant_rows runs on this CPU";
}

// LinearKernelImpl::dequant_amx, where a line has it: the panel it writes equals, bit for
// bit, the stored rows' dequantize() rounded by f32_to_bf16 and laid out as the AMX pack
// lays 32 rows out (gemm_bf16_amx.hpp: panel[((s·2 + c)·16 + t)·32 + 2n + e] = row
// 16c + n's element 32s + 2t + e) — written here from that formula, not by the pack — for
// whole panels, a last one of 29 rows (part of an 8-row group, past it the panels'
// padding), and of 20 rows (an 8-row group past N, zeroed). Columns past N hold ±0
// (their products are never stored); every element of the panel is written.
TEST(DequantRows, AmxPanelsHoldTheStoredRowsValuesInTheTileLayout) {
  int checked = 0;
  for (const LinearKernel& lk : linear_kernels()) {
    if (!lk.impl->dequant_amx || !may_use(lk.isa)) continue;
    const quant::TypeInfo* ti = quant::type_info(wtype_of(lk.type));
    ASSERT_NE(ti, nullptr) << lk.symbol;
    for (int K : {ti->block < 32 ? 32 : ti->block, 8 * ti->block})
      for (int N : {64, 61, 52}) {
        Repacked r;
        if (!repacked(lk, *ti, K, N, uint32_t(K * 17 + N), &r)) continue;
        const std::vector<uint8_t>& stored = r.stored;
        const size_t rb = r.rb;
        const PackedWeights& pw = r.pw;
        std::vector<float> row(K);
        for (int64_t n0 = 0; n0 < N; n0 += 32) {
          const int64_t n1 = std::min<int64_t>(N, n0 + 32);
          std::vector<uint16_t> panel(size_t(32) * K, 0x7FC1);  // a NaN where nothing was written
          lk.impl->dequant_amx(pw, n0, n1, panel.data());
          for (int c = 0; c < 32; ++c) {
            const int64_t n = n0 + c;
            if (n < N) ti->dequantize(stored.data() + rb * n, row.data(), K);
            for (int k = 0; k < K; ++k) {
              const uint16_t got = panel[((k / 32 * 2 + c / 16) * 16 + k % 32 / 2) * 32 + 2 * (c % 16) + k % 2];
              if (n < N)
                ASSERT_EQ(got, f32_to_bf16(row[k])) << lk.symbol << " K " << K << " N " << N << " row " << n
                                                    << " element " << k << " (" << row[k] << ")";
              else
                ASSERT_TRUE(got == 0 || got == 0x8000) << lk.symbol << " K " << K << " N " << N << ": column " << c
                                                       << " past the last row holds " << got;
            }
          }
        }
        ++checked;
      }
  }
  if (!checked) GTEST_SKIP() << "no registry line with dequant_amx runs on this CPU";
}

}  // namespace
}  // namespace headwise::kernels
