// The AMX bf16 panels (kernels/matmul/gemm_bf16_amx.hpp), where this CPU has AMX: the
// pack puts each value where the header says, and the products of packed panels equal a
// float64 product of the same bf16 values to within fp32 summation, 2⁻²⁰·Σ|terms|·√(K/32)
// (each tile step adds 32 exact bf16 products into fp32) —
// for one panel and several, a last panel of fewer than 32 columns, 32-row blocks and a
// last 16, with and without a bias, into a strided y whose other columns stay untouched;
// and the split rows F16 weights and their inputs take (amx_split_*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/matmul/gemm_bf16_amx.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/simd/half.hpp"

namespace headwise::kernels {
namespace {

namespace q = quant;

// 64-byte aligned storage for the operands the tiles read.
struct Aligned {
  explicit Aligned(size_t elems) : p(static_cast<uint16_t*>(std::aligned_alloc(64, (elems * 2 + 63) / 64 * 64))) {}
  ~Aligned() { std::free(p); }
  uint16_t* p;
};

TEST(AmxGemmBf16, PackPutsEachValueWhereTheLayoutSays) {
  if (!amx_usable()) GTEST_SKIP() << "no AMX here";
  const int64_t K = 96, ldw = 100;
  std::vector<uint16_t> w(32 * ldw);
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint16_t(i * 7 + 3);
  std::vector<uint16_t> panel(amx_panel_elems(K));
  amx_pack_panel_bf16(w.data(), ldw, K, panel.data());
  for (int64_t s = 0; s < K / 32; ++s)
    for (int c = 0; c < 2; ++c)
      for (int r = 0; r < 16; ++r)
        for (int n = 0; n < 16; ++n)
          for (int e = 0; e < 2; ++e)
            ASSERT_EQ(panel[((s * 2 + c) * 16 + r) * 32 + 2 * n + e], w[(16 * c + n) * ldw + 32 * s + 2 * r + e])
                << "step " << s << " tile " << c << " row " << r << " column " << n;
}

TEST(AmxGemmBf16, PanelProductsMatchFloat64) {
  if (!amx_usable()) GTEST_SKIP() << "no AMX here";
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t K : {32, 96, 2048})
    for (int cols : {32, 7, 45, 96})
      for (int M : {16, 32, 48, 80})
        for (bool bias : {false, true}) {
          const int np = (cols + 31) / 32;
          const int64_t ldx = amx_rows_ld(K), ldy = cols + 9;
          Aligned x(size_t(M) * ldx), panels(np * amx_panel_elems(K));
          std::vector<uint16_t> w(size_t(np) * 32 * K, 0);  // rows past cols stay zero
          for (int n = 0; n < cols; ++n)
            for (int64_t k = 0; k < K; ++k) w[n * K + k] = q::f32_to_bf16(u(g));
          for (int m = 0; m < M; ++m)
            for (int64_t k = 0; k < ldx; ++k) x.p[m * ldx + k] = k < K ? q::f32_to_bf16(u(g)) : 0;
          std::vector<float> b(cols);
          for (float& v : b) v = u(g);
          for (int p = 0; p < np; ++p) amx_pack_panel_bf16(w.data() + p * 32 * K, K, K, panels.p + p * amx_panel_elems(K));
          std::vector<float> y(size_t(M) * ldy, 1234.5f);
          amx_gemm_panels_bf16(x.p, ldx, M, K, panels.p, cols, bias ? b.data() : nullptr, y.data(), ldy);
          for (int m = 0; m < M; ++m)
            for (int j = 0; j < ldy; ++j) {
              const float got = y[m * ldy + j];
              if (j >= cols) {
                ASSERT_EQ(got, 1234.5f) << "column " << j << " past " << cols << " was written";
                continue;
              }
              double ref = bias ? b[j] : 0, mag = bias ? std::fabs(b[j]) : 0;
              for (int64_t k = 0; k < K; ++k) {
                const double t = double(q::bf16_to_f32(x.p[m * ldx + k])) * q::bf16_to_f32(w[j * K + k]);
                ref += t;
                mag += std::fabs(t);
              }
              ASSERT_LE(std::fabs(got - ref), std::ldexp(mag, -20) * std::sqrt(double(K) / 32) + 1e-30)
                  << "K " << K << " cols " << cols << " M " << M << " bias " << bias << " at " << m << "," << j;
            }
        }
}

// The split rows: an f16 weight is exactly hi + lo, an fp32 input within 2⁻¹⁷ of it (hi
// the nearest bf16), laid out [whi | wlo | whi] and [xhi | xhi | xlo]; K 40 ends on a
// partial vector of 8, and nothing is written past 3K.
TEST(AmxGemmBf16, SplitRowsHoldTheValuesInTheirLayout) {
  if (!amx_usable()) GTEST_SKIP() << "no AMX here";
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-4, 4);
  for (int64_t K : {16, 40, 2048}) {
    std::vector<float> x(K);
    std::vector<uint16_t> w(K), xs(3 * K + 8, 0xABCD), ws(3 * K + 8, 0xABCD);
    for (int64_t k = 0; k < K; ++k) {
      x[k] = u(g) * (k % 7 == 0 ? 1e-30f : 1.0f);
      w[k] = f32_to_f16(u(g));
    }
    amx_split_input_row(x.data(), K, xs.data());
    amx_split_f16_weight_row(w.data(), K, ws.data());
    for (int64_t k = 0; k < K; ++k) {
      const float xh = q::bf16_to_f32(xs[k]), xl = q::bf16_to_f32(xs[2 * K + k]);
      ASSERT_EQ(xs[K + k], xs[k]) << k;
      ASSERT_EQ(xs[k], q::f32_to_bf16(x[k])) << k;
      ASSERT_LE(std::fabs(double(xh) + xl - x[k]), std::ldexp(std::fabs(x[k]), -17)) << "input " << k;
      const float wh = q::bf16_to_f32(ws[k]), wl = q::bf16_to_f32(ws[K + k]);
      ASSERT_EQ(ws[2 * K + k], ws[k]) << k;
      ASSERT_EQ(double(wh) + wl, double(f16_to_f32(w[k]))) << "weight " << k;
    }
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(xs[3 * K + i], 0xABCD) << "input row written past 3K";
      ASSERT_EQ(ws[3 * K + i], 0xABCD) << "weight row written past 3K";
    }
  }
}

}  // namespace
}  // namespace headwise::kernels
