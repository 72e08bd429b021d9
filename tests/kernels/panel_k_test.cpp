// The Q2_K / Q3_K / Q4_K / Q5_K / Q6_K / IQ4_XS registry entries that read row panels
// (kernels/quant/panel_k_x86.hpp, panel_q2_k_x86.hpp, panel_iq4_xs_x86.hpp)
// on the shapes their loops split on, beyond the registry test's (quant_linear_test.cpp):
// an even number of panels whose last one is partial (the avx512 Q4_K/Q5_K entries take
// 8-row panels in pairs, one zmm for 16 rows; Q3_K's, Q6_K's and IQ4_XS's are 16-row panels: N = 12, 29, 40
// leave a partial last panel either way), a lone last panel (N = 8·odd + r), one to
// three super-blocks, and input rows that leave every remainder of the 4- and 2-row
// tiles and cross the 64-row chunks. Reference: float64 from the dequantized weights
// and the int8 inputs the kernel sees; the same bound as quant_linear_test.cpp (the
// kernel differs from it only in fp32 rounding). Also: the repack writes the same bytes
// whether it runs in one call or panel by panel (the plan runs groups in parallel), and
// fills the padding rows of the last panel (they must not depend on the buffer's old bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/matmul/linear.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels {
namespace {

struct Quantized {
  std::vector<uint8_t> q;
  std::vector<double> wd;  // dequantized, [N][K]
  PackedWeights pw;
};

Quantized quantize(quant::WType qt, WeightType wt, int K, int N, std::mt19937& g) {
  const quant::TypeInfo& ti = *quant::type_info(qt);
  std::uniform_real_distribution<float> u(-1, 1);
  Quantized r;
  const size_t rb = quant::row_bytes(ti, K);
  r.q.resize(rb * N);
  r.wd.resize(size_t(K) * N);
  std::vector<float> row(K);
  for (int n = 0; n < N; ++n) {
    for (float& v : row) v = u(g) * (1 + n % 3);  // rows of different scales
    ti.quantize(row.data(), r.q.data() + n * rb, K);
    ti.dequantize(r.q.data() + n * rb, row.data(), K);
    for (int k = 0; k < K; ++k) r.wd[size_t(n) * K + k] = row[k];
  }
  r.pw.type = wt;
  r.pw.data = r.q.data();
  r.pw.K = r.pw.Kp = K;
  r.pw.N = N;
  r.pw.KB = ti.block;
  r.pw.NB = 1;
  r.pw.row_bytes = int64_t(rb);
  return r;
}

uint8_t* aligned64(std::vector<uint8_t>& v) {
  return v.data() + (64 - reinterpret_cast<uintptr_t>(v.data()) % 64) % 64;
}

class PanelKTest : public ::testing::TestWithParam<const LinearKernel*> {};

TEST_P(PanelKTest, OddShapesMatchFloat64Reference) {
  const LinearKernel& lk = *GetParam();
  quant::WType qt;
  ASSERT_TRUE(quant::parse_wtype(weight_type_name(lk.type), &qt));
  const quant::TypeInfo& ti = *quant::type_info(qt);
  for (auto [K, N] : {std::pair{256, 12}, {768, 29}, {512, 40}, {256, 3}}) {
    std::mt19937 g(K + 7 * N);
    Quantized w = quantize(qt, lk.type, K, N, g);
    if (!lk.impl->supports(w.pw)) GTEST_SKIP() << lk.symbol << ": this CPU lacks AVX512-VNNI/BF16";
    ASSERT_NE(lk.impl->repack, nullptr) << lk.symbol;
    const int G = lk.impl->repack_rows;
    const size_t bytes = lk.impl->repacked_bytes(w.pw);
    // one call, and group by group into a buffer of other filler: the same bytes
    std::vector<uint8_t> one(bytes + 64, 0x00), grouped(bytes + 64, 0xFF);
    lk.impl->repack(w.pw, 0, N, aligned64(one));
    for (int n0 = 0; n0 < N; n0 += G) lk.impl->repack(w.pw, n0, std::min(N, n0 + G), aligned64(grouped));
    ASSERT_EQ(std::memcmp(aligned64(one), aligned64(grouped), bytes), 0) << lk.symbol << " K " << K << " N " << N;
    PackedWeights pw = w.pw;
    pw.data = aligned64(grouped);
    pw.repacked = true;
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> bias(N);
    for (float& b : bias) b = u(g);
    for (int rows : {1, 2, 3, 6, 7, 66})
      for (int threads : {1, 2})
        for (const float* bp : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
          const int64_t ldx = K + 1, ldy = N + 3;
          std::vector<float> x(size_t(rows) * ldx), y(size_t(rows) * ldy, NAN);
          for (float& v : x) v = u(g);
          std::vector<uint8_t> scratch(lk.impl->scratch_bytes(pw, rows) + 64);
          lk.impl->run(pw, bp, x.data(), ldx, y.data(), ldy, rows, threads, aligned64(scratch));
          std::vector<uint8_t> xa(quant::act_row_bytes(ti.act, K));
          std::vector<double> xd(K);
          double worst = 0;
          for (int r = 0; r < rows; ++r) {
            quant::prepare_activations(ti.act, x.data() + r * ldx, xa.data(), K);
            quant::activation_values(ti.act, xa.data(), xd.data(), K);
            for (int n = 0; n < N; ++n) {
              double ref = bp ? bp[n] : 0, mag = std::fabs(ref);
              for (int k0 = 0; k0 < K; k0 += 32) {
                double max_w = 0;
                for (int k = k0; k < k0 + 32; ++k) max_w = std::max(max_w, std::fabs(w.wd[size_t(n) * K + k]));
                for (int k = k0; k < k0 + 32; ++k) {
                  ref += w.wd[size_t(n) * K + k] * xd[k];
                  mag += 2 * max_w * std::fabs(xd[k]);
                }
              }
              // fp32 rounding only: 4·2⁻²⁴ of the partial sums' magnitude (quant_linear_test.cpp)
              const double v = y[r * ldy + n], err = std::fabs(v - ref) / (4 * std::ldexp(mag, -24));
              worst = std::max(worst, std::isnan(v) ? INFINITY : err);
            }
            for (int64_t n = N; n < ldy; ++n) ASSERT_TRUE(std::isnan(y[r * ldy + n])) << "wrote past N";
          }
          ASSERT_LE(worst, 1.0) << lk.symbol << " K " << K << " N " << N << " rows " << rows << " threads "
                                << threads << (bp ? " bias" : "");
        }
  }
}

std::vector<const LinearKernel*> panel_entries() {
  std::vector<const LinearKernel*> out;
  for (const LinearKernel& lk : linear_kernels())
    if ((lk.type == WeightType::q2_k || lk.type == WeightType::q3_k || lk.type == WeightType::q4_k || lk.type == WeightType::q5_k || lk.type == WeightType::q6_k ||
         lk.type == WeightType::iq4_xs) && lk.isa != Isa::scalar) out.push_back(&lk);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, PanelKTest, ::testing::ValuesIn(panel_entries()),
                         [](const ::testing::TestParamInfo<const LinearKernel*>& i) { return std::string(i.param->symbol); });

}  // namespace
}  // namespace headwise::kernels
