// A SwiGLU FFN's gate and up projections as one gated product (Projection::run_gated;
// kernels/matmul/gemm_bf16_amx.hpp's gated pair), where the CPU has AMX: its rows equal,
// bit for bit, the plan's swiglu of the two projections run apart — each block's tiles
// sum in the same order either way, and the same element-wise function forms y — for
// every weight type the panels take (Q8_0 and Q4_K dequantized, BF16 as stored, F16
// split), with and without biases, N one part-filled panel or several chunks with a part-
// filled last, M ending on a 16-row block, on 1 and 2 threads, with scratch_bytes(M) of
// scratch (a guard after it stays untouched). gated_rows is 0 where the pair cannot run
// so: shapes or types that differ, fewer rows than the panels take, AMX off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "graph/projection.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/elementwise/elementwise.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"
#include "kernels/simd/half.hpp"

namespace headwise::graph {
namespace {

namespace q = kernels::quant;
using kernels::Isa;
using WT = kernels::WeightType;

// N rows of K random weights stored as `type`.
std::vector<uint8_t> random_rows(WT type, int K, int N, std::mt19937& g) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> row(K);
  if (type == WT::bf16 || type == WT::f16) {
    std::vector<uint8_t> w(size_t(K) * N * 2);
    auto* h = reinterpret_cast<uint16_t*>(w.data());
    for (size_t i = 0; i < size_t(K) * N; ++i) h[i] = type == WT::bf16 ? q::f32_to_bf16(u(g)) : kernels::f32_to_f16(u(g));
    return w;
  }
  const q::TypeInfo& ti = *q::type_info(type == WT::q8_0 ? q::WType::q8_0 : q::WType::q4_k);
  const size_t rb = q::row_bytes(ti, K);
  std::vector<uint8_t> w(rb * N);
  for (int n = 0; n < N; ++n) {
    for (float& v : row) v = u(g);
    ti.quantize(row.data(), w.data() + rb * n, K);
  }
  return w;
}

struct alignas(64) Line {
  unsigned char b[64];
};

TEST(ProjectionGated, GatedRowsAreTheSwigluOfTheTwoProductsBitForBit) {
  if (!kernels::may_use(Isa::avx512) || !kernels::set_amx_override(true)) GTEST_SKIP() << "no AMX here";
  const kernels::SwigluRowsFn swiglu = kernels::swiglu_rows(kernels::elementwise_kernel(Isa::avx512));
  const struct {
    WT type;
    int K, N;
  } shapes[] = {{WT::q8_0, 64, 29},   {WT::q8_0, 2048, 1100}, {WT::q4_k, 256, 70},
                {WT::bf16, 64, 300},  {WT::bf16, 2048, 1100}, {WT::f16, 96, 70},
                // K 2048: chunks of 8 panels of each; N 1100 ends on a chunk of 3 (a range
                // a thread, split apart from the chunks before), 1056 on one of 1 (its rows
                // split between the threads)
                {WT::q8_0, 2048, 1056}};
  for (const auto& c : shapes)
    for (bool bias : {false, true}) {
      std::mt19937 g(c.K * 7 + c.N + bias);
      std::uniform_real_distribution<float> u(-1, 1);
      const std::vector<uint8_t> wg = random_rows(c.type, c.K, c.N, g), wu = random_rows(c.type, c.K, c.N, g);
      std::vector<float> bg(c.N), bu(c.N);
      for (float& v : bg) v = u(g);
      for (float& v : bu) v = u(g);
      std::unique_ptr<Projection> pg, pu;
      ASSERT_TRUE(Projection::create_typed(c.type, wg.data(), c.K, c.N, bias ? bg.data() : nullptr, Isa::avx512, &pg).ok());
      ASSERT_TRUE(Projection::create_typed(c.type, wu.data(), c.K, c.N, bias ? bu.data() : nullptr, Isa::avx512, &pu).ok());
      const std::string what = std::string(kernels::weight_type_name(c.type)) + " K " + std::to_string(c.K) + " N " +
                               std::to_string(c.N) + (bias ? " with biases" : "");
      const int min_rows = c.type == WT::q8_0 || c.type == WT::q4_k ? Projection::kAmxDequantMinRows : 16;
      EXPECT_EQ(pg->gated_rows(*pu, min_rows - 1), 0) << what;
      for (int M : {min_rows, 80, 149}) {
        if (c.K == 2048 && M != 149) continue;  // (time)
        const int rows = pg->gated_rows(*pu, M);
        ASSERT_EQ(rows, M / 16 * 16) << what << " M " << M;
        const int64_t ldx = c.K + 3, ldy = c.N + 5;
        std::vector<float> x(size_t(M) * ldx), yg(size_t(M) * c.N), yu(size_t(M) * c.N), want(size_t(M) * c.N);
        for (float& v : x) v = u(g);
        const size_t need = std::max(pg->scratch_bytes(M), pu->scratch_bytes(M)), guard = 4096;
        std::vector<Line> scratch((need + guard) / 64 + 1);
        auto* bytes = reinterpret_cast<unsigned char*>(scratch.data());
        ASSERT_TRUE(pg->run(x.data(), ldx, yg.data(), c.N, M, 2, scratch.data()).ok());
        ASSERT_TRUE(pu->run(x.data(), ldx, yu.data(), c.N, M, 2, scratch.data()).ok());
        swiglu({yg.data(), c.N}, {yu.data(), c.N}, {want.data(), c.N}, M, c.N);
        for (int threads : {1, 2}) {
          std::fill(bytes + pg->scratch_bytes(M), bytes + scratch.size() * 64, 0xAB);
          std::vector<float> y(size_t(M) * ldy, 1234.5f);
          ASSERT_TRUE(pg->run_gated(*pu, swiglu, x.data(), ldx, y.data(), ldy, M, threads, scratch.data()).ok());
          EXPECT_TRUE(std::all_of(bytes + pg->scratch_bytes(M), bytes + scratch.size() * 64,
                                  [](unsigned char v) { return v == 0xAB; }))
              << what << ": run_gated wrote past scratch_bytes(" << M << ")";
          for (int r = 0; r < M; ++r)
            for (int64_t j = 0; j < ldy; ++j) {
              const float got = y[r * ldy + j];
              if (r >= rows || j >= c.N) {
                ASSERT_EQ(got, 1234.5f) << what << ": row " << r << " column " << j << " is not the pair's";
                continue;
              }
              ASSERT_EQ(std::memcmp(&got, &want[r * c.N + j], 4), 0)
                  << what << " M " << M << " threads " << threads << ": row " << r << " column " << j << ": " << got
                  << " against " << want[r * c.N + j];
            }
        }
      }
    }
  kernels::clear_amx_override();
}

TEST(ProjectionGated, PairsThatCannotRunSoAreRefused) {
  if (!kernels::may_use(Isa::avx512) || !kernels::set_amx_override(true)) GTEST_SKIP() << "no AMX here";
  std::mt19937 g(3);
  const std::vector<uint8_t> a = random_rows(WT::bf16, 64, 40, g), b = random_rows(WT::bf16, 64, 48, g),
                             c = random_rows(WT::q8_0, 64, 40, g), d = random_rows(WT::bf16, 96, 40, g);
  std::unique_ptr<Projection> pa, pb, pc, pd;
  ASSERT_TRUE(Projection::create_typed(WT::bf16, a.data(), 64, 40, nullptr, Isa::avx512, &pa).ok());
  ASSERT_TRUE(Projection::create_typed(WT::bf16, b.data(), 64, 48, nullptr, Isa::avx512, &pb).ok());
  ASSERT_TRUE(Projection::create_typed(WT::q8_0, c.data(), 64, 40, nullptr, Isa::avx512, &pc).ok());
  ASSERT_TRUE(Projection::create_typed(WT::bf16, d.data(), 96, 40, nullptr, Isa::avx512, &pd).ok());
  EXPECT_EQ(pa->gated_rows(*pa, 64), 64);
  EXPECT_EQ(pa->gated_rows(*pb, 64), 0) << "N differs";
  EXPECT_EQ(pa->gated_rows(*pd, 64), 0) << "K differs";
  EXPECT_EQ(pa->gated_rows(*pc, 64), 64) << "bf16 rows and dequantized Q8_0 are the same panels";
  EXPECT_EQ(pc->gated_rows(*pa, 63), 0) << "Q8_0 takes the panels from " << Projection::kAmxDequantMinRows << " rows";
  std::vector<float> x(64 * 64), y(64 * 48);
  std::vector<Line> scratch(pa->scratch_bytes(64) / 64 + 1);
  const Status s = pa->run_gated(*pb, kernels::swiglu_rows(kernels::elementwise_kernel(Isa::avx512)), x.data(), 64,
                                 y.data(), 48, 64, 1, scratch.data());
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.message();
  kernels::set_amx_override(false);
  std::unique_ptr<Projection> off;
  ASSERT_TRUE(Projection::create_typed(WT::bf16, a.data(), 64, 40, nullptr, Isa::avx512, &off).ok());
  EXPECT_EQ(off->gated_rows(*off, 64), 0) << "AMX off: " << off->implementation(64);
  kernels::clear_amx_override();
}

}  // namespace
}  // namespace headwise::graph
