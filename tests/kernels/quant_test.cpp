// The weight-type catalogue (kernels/quant/): conversions, quantize → dequantize error
// bounds, and every type × ISA's fused product against a float64 reference computed
// from the DEQUANTIZED weights and the SAME prepared (bf16-rounded or int8-quantized)
// inputs, so only the order of fp32 summation differs and the tolerance can be tight.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {
namespace {

TEST(QuantConvert, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_f32(f32_to_half(f))));
    } else {
      ASSERT_EQ(f32_to_half(f), h) << "half 0x" << std::hex << h;
    }
  }
}

TEST(QuantConvert, HalfRoundsToNearestEven) {
  EXPECT_EQ(f32_to_half(1.0f + 1.0f / 2048), 0x3C00);           // tie → even (1.0)
  EXPECT_EQ(f32_to_half(1.0f + 3.0f / 2048), 0x3C02);           // tie → even (1 + 2/1024)
  EXPECT_EQ(f32_to_half(1.0f + 1.0f / 2048 + 1e-6f), 0x3C01);   // above the tie
  EXPECT_EQ(f32_to_half(65520.0f), 0x7C00);                     // rounds past 65504: inf
  EXPECT_EQ(f32_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_half(std::ldexp(1.0f, -25)), 0x0000);        // half the smallest subnormal: tie → 0
  EXPECT_EQ(f32_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_half(-std::ldexp(1.0f, -24)), 0x8001);
}

TEST(QuantConvert, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3F808000u)), 0x3F80);  // tie → even
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3F818000u)), 0x3F82);  // tie → even (up)
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3F808001u)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  for (uint32_t h = 0; h < 65536; ++h) {
    if (!std::isnan(bf16_to_f32(uint16_t(h)))) {
      ASSERT_EQ(f32_to_bf16(bf16_to_f32(uint16_t(h))), h);
    }
  }
}

std::vector<float> gaussian(size_t n, uint32_t seed, float outlier_every = 0) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = nd(g);
  if (outlier_every > 0)  // a few large weights, as trained matrices have
    for (size_t i = 0; i < n; i += size_t(outlier_every)) v[i] *= 8;
  return v;
}

// Relative RMS error of quantize → dequantize on Gaussian rows with outliers, and its
// bound: measured here (x86-64, this code) and rounded up by ~10%. For reference, the
// grid steps: bf16 2⁻⁸ relative, f16 2⁻¹¹, Q8_0 max/127 per 32, 4-bit ~max/8 per 32
// (5-bit ~max/16; Q3_K ~max/4 per 16; IQ4_XS 16 levels, denser near 0, per 32; Q2_K
// ~range/3 per 16).
struct ErrorBound {
  WType t;
  double rel_rms;
};
const ErrorBound kBounds[] = {
    {WType::f16, 2.2e-4}, {WType::bf16, 1.75e-3}, {WType::q8_0, 1.03e-2},
    {WType::q4_0, 0.166}, {WType::q3_k, 0.225},  {WType::q4_k, 0.105},   {WType::q5_k, 0.052}, {WType::q6_k, 0.029},
    {WType::iq4_xs, 0.123}, {WType::q2_k, 0.335},
};

TEST(QuantRoundTrip, ErrorWithinBound) {
  const int64_t K = 4096;
  const std::vector<float> x = gaussian(K, 7, 61);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  for (const ErrorBound& b : kBounds) {
    const TypeInfo* ti = type_info(b.t);
    ASSERT_NE(ti, nullptr);
    std::vector<uint8_t> q(row_bytes(*ti, K));
    std::vector<float> y(K);
    ti->quantize(x.data(), q.data(), K);
    ti->dequantize(q.data(), y.data(), K);
    double es = 0;
    for (int64_t k = 0; k < K; ++k) es += double(y[k] - x[k]) * (y[k] - x[k]);
    const double rel = std::sqrt(es / ss);
    printf("  %-5s relative RMS error %.3g (bound %.3g), %.3f bits/weight\n", ti->name, rel, b.rel_rms,
           8.0 * ti->block_bytes / ti->block);
    EXPECT_LE(rel, b.rel_rms) << ti->name;
    // Quantizing the dequantized values again reproduces them (they are grid points),
    // except for K-quants whose scale search may pick another, no worse, grid.
    if (b.t == WType::f16 || b.t == WType::bf16 || b.t == WType::q8_0) {
      std::vector<uint8_t> q2(q.size());
      ti->quantize(y.data(), q2.data(), K);
      EXPECT_EQ(q, q2) << ti->name;
    }
  }
}

// Per element, Q8_0 and Q4_0 are within half a step (a whole step where Q4_0 clamps
// at +7) of the block's scale, as stored in f16.
TEST(QuantRoundTrip, BlockTypesWithinHalfAStep) {
  const int64_t K = 32 * 37;
  const std::vector<float> x = gaussian(K, 11, 13);
  for (WType t : {WType::q8_0, WType::q4_0}) {
    const TypeInfo* ti = type_info(t);
    std::vector<uint8_t> q(row_bytes(*ti, K));
    std::vector<float> y(K);
    ti->quantize(x.data(), q.data(), K);
    ti->dequantize(q.data(), y.data(), K);
    for (int64_t b = 0; b < K / 32; ++b) {
      const uint16_t dh = *reinterpret_cast<const uint16_t*>(q.data() + b * ti->block_bytes);
      const float d = std::fabs(half_to_f32(dh));
      for (int j = 0; j < 32; ++j) {
        const int64_t k = b * 32 + j;
        const float slack = t == WType::q4_0 ? 1.0f : 0.5f;
        ASSERT_LE(std::fabs(y[k] - x[k]), slack * d * 1.0001f + 1e-7f) << ti->name << " element " << k;
      }
    }
  }
}

// All-zero and constant rows come back exactly (up to f16 scale rounding): no 0/0.
TEST(QuantRoundTrip, ZeroRowsAndConstantRows) {
  for (int c = 0; c < 2; ++c) {
    const int64_t K = 512;
    std::vector<float> x(K, c == 0 ? 0.0f : -0.75f);
    int n;
    const WType* types = all_types(&n);
    for (int i = 0; i < n; ++i) {
      const TypeInfo* ti = type_info(types[i]);
      std::vector<uint8_t> q(row_bytes(*ti, K));
      std::vector<float> y(K);
      ti->quantize(x.data(), q.data(), K);
      ti->dequantize(q.data(), y.data(), K);
      for (int64_t k = 0; k < K; ++k) ASSERT_NEAR(y[k], x[k], 1e-3) << ti->name << " constant " << x[0];
    }
  }
}

// Hand-built blocks with values worked out from the format description (blocks.hpp),
// covering the Q4_K scale packing of sub-blocks 4..7, every Q6_K group's bits and
// Q5_K's 5th bits (bit j of qh[l] for element l of sub-block j), Q3_K's scale packing
// (sub-blocks below and above 8) and its 3rd bits (bit 4h + k of hmask[l]).
TEST(QuantSemantics, HandBuiltBlocks) {
  {
    // Q2_K: scales[j] = sc | m << 4 for sub-block j (elements 16j .. 16j + 15); element
    // e = 128h + 32k + l in bits 2k, 2k + 1 of qs[32h + l].
    BlockQ2_K b{};
    b.d = f32_to_half(0.5f);
    b.dmin = f32_to_half(0.25f);
    b.scales[3] = uint8_t(7 | 2 << 4);    // sub-block 3: sc 7, m 2
    b.scales[13] = uint8_t(15 | 9 << 4);  // sub-block 13: sc 15, m 9
    b.qs[18] = uint8_t(3 << 2);           // element 50 = 32·1 + 18: q = 3
    b.qs[32 + 21] = uint8_t(2 << 4);      // element 213 = 128 + 32·2 + 21: q = 2
    float y[256];
    type_info(WType::q2_k)->dequantize(&b, y, 256);
    EXPECT_FLOAT_EQ(y[50], 0.5f * 7 * 3 - 0.25f * 2);
    EXPECT_FLOAT_EQ(y[51], -0.25f * 2);  // q = 0: the min alone
    EXPECT_FLOAT_EQ(y[213], 0.5f * 15 * 2 - 0.25f * 9);
    EXPECT_FLOAT_EQ(y[212], -0.25f * 9);
    EXPECT_FLOAT_EQ(y[0], 0.0f);
  }
  {
    // IQ4_XS: scales stored + 32 as 4 low bits (scales_l, sub-block 2i in byte i's low
    // nibble) and 2 high bits (bits 2j, 2j + 1 of scales_h); sub-block j's nibbles in
    // bytes 16j .. 16j + 15, element l < 16 low, l + 16 high; levels kIq4Values.
    BlockIQ4_XS b{};
    b.d = f32_to_half(0.5f);
    // sub-block 0: 32 (sc 0); 1: 32 + 3 = 0x23; 6: 32 − 17 = 15 = 0x0F; 7: 63 (sc 31)
    const int u[8] = {32, 0x23, 32, 32, 32, 32, 0x0F, 63};
    for (int j = 0; j < 8; ++j) {
      b.scales_l[j / 2] |= uint8_t((u[j] & 0xF) << (4 * (j % 2)));
      b.scales_h |= uint16_t((u[j] >> 4) << (2 * j));
    }
    b.q[16 * 1 + 2] = uint8_t(0 | 15 << 4);  // sub-block 1: element 2 → level 0 (−127), 18 → 15 (113)
    b.q[16 * 6 + 15] = uint8_t(9 << 4);      // sub-block 6: element 15 → level 0, 31 → 9 (13)
    b.q[16 * 7 + 0] = uint8_t(7);            // sub-block 7: element 0 → level 7 (−10)
    float y[256];
    type_info(WType::iq4_xs)->dequantize(&b, y, 256);
    EXPECT_FLOAT_EQ(y[32 + 2], 0.5f * 3 * -127);
    EXPECT_FLOAT_EQ(y[32 + 18], 0.5f * 3 * 113);
    EXPECT_FLOAT_EQ(y[32 + 3], 0.5f * 3 * -127);  // nibble 0 is level 0
    EXPECT_FLOAT_EQ(y[192 + 15], 0.5f * -17 * -127);
    EXPECT_FLOAT_EQ(y[192 + 31], 0.5f * -17 * 13);
    EXPECT_FLOAT_EQ(y[224], 0.5f * 31 * -10);
    EXPECT_FLOAT_EQ(y[0], 0.0f);  // sc − 32 = 0
  }
  {
    BlockQ3_K b{};
    b.d = f32_to_half(0.25f);
    // every scale stored as 32 (sc − 32 = 0) but sub-block 3: 32 + 5 = 0x25, and 13: 32 − 7 = 0x19
    for (int j = 0; j < 16; ++j) {
      const int u = j == 3 ? 0x25 : j == 13 ? 0x19 : 32;
      b.scales[j % 8] |= uint8_t((u & 0xF) << (j < 8 ? 0 : 4));
      b.scales[8 + j % 4] |= uint8_t((u >> 4) << (2 * (j / 4)));
    }
    // element 48 + 2 = 0·128 + 32·1 + 18 (sub-block 3): low bits 2 in bits 2, 3 of qs[18],
    // 3rd bit in bit 1 of hmask[18] → q = 6
    b.qs[18] = uint8_t(2 << 2);
    b.hmask[18] = uint8_t(1 << 1);
    // element 208 + 5 = 128 + 32·2 + 21 (sub-block 13): low bits 3 in bits 4, 5 of
    // qs[32 + 21], no 3rd bit (bit 6 of hmask[21]) → q = 3
    b.qs[53] = uint8_t(3 << 4);
    // element 213's neighbour 214: 3rd bit only → q = 4 (x = 0)
    b.hmask[22] = uint8_t(1 << 6);
    float y[256];
    type_info(WType::q3_k)->dequantize(&b, y, 256);
    EXPECT_FLOAT_EQ(y[50], 0.25f * 5 * (6 - 4));
    EXPECT_FLOAT_EQ(y[51], 0.25f * 5 * (0 - 4));
    EXPECT_FLOAT_EQ(y[213], 0.25f * -7 * (3 - 4));
    EXPECT_FLOAT_EQ(y[214], 0.0f);
    EXPECT_FLOAT_EQ(y[212], 0.25f * -7 * (0 - 4));
    EXPECT_FLOAT_EQ(y[0], 0.0f);  // sc − 32 = 0
  }
  {
    BlockQ4_K b{};
    b.d = f32_to_half(0.5f);
    b.dmin = f32_to_half(0.25f);
    // sub-block 1: sc 3, m 5 (low 6 bits of bytes 1, 5); sub-block 6: sc 0x2A = 42, m 0x17 = 23
    b.scales[1] = 3;
    b.scales[5] = 5;
    b.scales[10] = uint8_t((42 & 0xF) | ((23 & 0xF) << 4));
    b.scales[2] |= uint8_t((42 >> 4) << 6);
    b.scales[6] |= uint8_t((23 >> 4) << 6);
    b.q[0] = 0x9F;   // element 0 (sub 0) = 15, element 32 (sub 1) = 9
    b.q[96 + 5] = 0x70;  // element 192 + 5 (sub 6) = 0, element 224 + 5 (sub 7) = 7
    b.q[64 + 7] = 0x0C;  // element 128 + 7 (sub 4) = 12
    float y[256];
    type_info(WType::q4_k)->dequantize(&b, y, 256);
    EXPECT_FLOAT_EQ(y[0], 0.0f);                          // sc 0, m 0
    EXPECT_FLOAT_EQ(y[32], 0.5f * 3 * 9 - 0.25f * 5);    // sub 1
    EXPECT_FLOAT_EQ(y[33], -0.25f * 5);
    EXPECT_FLOAT_EQ(y[197], 0.5f * 42 * 0 - 0.25f * 23);  // sub 6
    EXPECT_FLOAT_EQ(y[229], 0.0f);                        // sub 7: sc, m zero
    EXPECT_FLOAT_EQ(y[135], 0.0f);                        // sub 4: sc, m zero
  }
  {
    BlockQ6_K b{};
    b.d = f32_to_half(0.125f);
    for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(j - 8);
    // element 128·1 + 32·3 + 4 = 228: low nibble in ql[64 + 32 + 4] (high), top bits 6,7 of qh[32 + 4]
    b.ql[100] = 0xB0;           // low 4 bits 0xB
    b.qh[36] = uint8_t(2 << 6);  // top bits 2 → q = 0x2B = 43
    // element 0·128 + 32·1 + 17 = 49: ql[32 + 17] low nibble 0x5, qh[17] bits 2,3 = 3 → q = 0x35 = 53
    b.ql[49] = 0x05;
    b.qh[17] = uint8_t(3 << 2);
    float y[256];
    type_info(WType::q6_k)->dequantize(&b, y, 256);
    EXPECT_FLOAT_EQ(y[228], 0.125f * (228 / 16 - 8) * (43 - 32));
    EXPECT_FLOAT_EQ(y[49], 0.125f * (49 / 16 - 8) * (53 - 32));
    EXPECT_FLOAT_EQ(y[0], 0.125f * (0 - 8) * (0 - 32));
  }
  {
    BlockQ5_K b{};
    b.d = f32_to_half(0.5f);
    b.dmin = f32_to_half(0.25f);
    // sub-block 3: sc 7, m 2 (bytes 3, 7); sub-block 5: sc 0x31 = 49, m 0x2C = 44
    b.scales[3] = 7;
    b.scales[7] = 2;
    b.scales[9] = uint8_t((49 & 0xF) | ((44 & 0xF) << 4));
    b.scales[1] |= uint8_t((49 >> 4) << 6);
    b.scales[5] |= uint8_t((44 >> 4) << 6);
    b.q[32 + 4] = 0xA0;            // element 96 + 4 (sub 3) low bits 10; element 64 + 4 (sub 2) 0
    b.qh[4] = uint8_t(1 << 3);     // element 96 + 4: 5th bit → q = 26
    b.q[64 + 31] = 0x06;           // element 128 + 31 (sub 4) low bits 6, no 5th bit
    b.qh[31] = uint8_t(1 << 5);    // element 160 + 31 (sub 5): q = 16 (low bits 0)
    b.qh[0] = uint8_t(1 << 2);     // element 64 (sub 2): q = 16, but sc, m zero
    float y[256];
    type_info(WType::q5_k)->dequantize(&b, y, 256);
    EXPECT_FLOAT_EQ(y[100], 0.5f * 7 * 26 - 0.25f * 2);   // sub 3
    EXPECT_FLOAT_EQ(y[101], -0.25f * 2);
    EXPECT_FLOAT_EQ(y[159], 0.0f);                         // sub 4: sc, m zero
    EXPECT_FLOAT_EQ(y[191], 0.5f * 49 * 16 - 0.25f * 44);  // sub 5
    EXPECT_FLOAT_EQ(y[190], -0.25f * 44);
    EXPECT_FLOAT_EQ(y[64], 0.0f);
  }
  {
    BlockQ4_0 b{};
    b.d = f32_to_half(-2.0f);
    b.q[3] = 0xA1;  // element 3 = 1, element 19 = 10
    float y[32];
    type_info(WType::q4_0)->dequantize(&b, y, 32);
    EXPECT_FLOAT_EQ(y[3], -2.0f * (1 - 8));
    EXPECT_FLOAT_EQ(y[19], -2.0f * (10 - 8));
    EXPECT_FLOAT_EQ(y[0], -2.0f * -8);
  }
}

// ---- fused products -------------------------------------------------------------

constexpr double kGemvUlps = 4;
double g_worst = 0;

struct Shape {
  int M;
  int64_t K, N;
};

void check_gemv(WType t, Isa isa, const Shape& s) {
  const TypeInfo* ti = type_info(t);
  const GemvFn fn = gemv_kernel(t, isa);
  ASSERT_NE(fn, nullptr) << ti->name << " has no " << isa_name(isa) << " kernel";
  const size_t rb = row_bytes(*ti, s.K);
  std::vector<uint8_t> w(rb * s.N);
  const std::vector<float> wf = gaussian(size_t(s.K * s.N), uint32_t(s.K * 31 + s.N), 29);
  for (int64_t n = 0; n < s.N; ++n) ti->quantize(wf.data() + n * s.K, w.data() + n * rb, s.K);
  // Inputs: rows a little apart (stride > row bytes), one of them all zeros.
  const size_t ab = act_row_bytes(ti->act, s.K) + 64;
  std::vector<uint8_t> xa(ab * s.M);
  std::vector<float> xf = gaussian(size_t(s.K * s.M), uint32_t(s.M + s.K));
  if (s.M > 2) std::fill(xf.begin() + s.K, xf.begin() + 2 * s.K, 0.0f);
  for (int m = 0; m < s.M; ++m) prepare_activations(ti->act, xf.data() + m * s.K, xa.data() + m * ab, s.K);
  // y rows wider than N with guards; compute rows [n0, N) with n0 > 0 when N allows.
  const int64_t ldy = s.N + 5, n0 = s.N > 2 ? 1 : 0;
  std::vector<float> y(size_t(ldy * s.M), NAN);
  fn(w.data(), rb, n0, s.N, xa.data(), ab, s.M, s.K, y.data(), ldy);
  std::vector<float> wd(s.K);
  std::vector<double> xd(s.K);
  double worst = 0;
  for (int m = 0; m < s.M; ++m) {
    activation_values(ti->act, xa.data() + m * ab, xd.data(), s.K);
    for (int64_t n = 0; n < s.N + 5; ++n) {
      const float got = y[m * ldy + n];
      if (n < n0 || n >= s.N) {
        ASSERT_TRUE(std::isnan(got)) << "wrote outside [n0, n1): n " << n;
        continue;
      }
      ti->dequantize(w.data() + n * rb, wd.data(), s.K);
      // mag = Σ_k |x_k|·2·max|w| over k's block of 32: a bound on the magnitude of every
      // partial sum the kernels form (for the offset types they sum d·q·x and d·offset·x
      // apart, each ≤ 2·max|w|·|x| of the block).
      double ref = 0, mag = 0;
      for (int64_t k0 = 0; k0 < s.K; k0 += 32) {
        const int64_t k1 = std::min<int64_t>(s.K, k0 + 32);
        double max_w = 0;
        for (int64_t k = k0; k < k1; ++k) max_w = std::fmax(max_w, std::fabs(wd[k]));
        for (int64_t k = k0; k < k1; ++k) {
          ref += double(wd[k]) * xd[k];
          mag += std::fabs(xd[k]) * 2 * max_w;
        }
      }
      // Only fp32 rounding differs from the reference: error in units of 2⁻²⁴·mag.
      // The input quantization (~0.4% per value for int8, 0.2% for bf16) is NOT covered
      // by this tolerance: the reference multiplies the same quantized inputs.
      const double tol = std::ldexp(mag, -24) + 1e-30;
      worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - ref) / tol);
    }
  }
  // Measured worst ≤ 0.8 units (printed); 4 leaves room for other summation orders.
  EXPECT_LE(worst, kGemvUlps) << ti->name << " " << isa_name(isa) << " M " << s.M << " K " << s.K << " N " << s.N;
  g_worst = std::max(g_worst, worst);
}

TEST(QuantGemv, EveryTypeAndIsaAgainstFloat64) {
  int n;
  const WType* types = all_types(&n);
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar}) {
    if (!may_use(isa)) {
      printf("  this CPU cannot run %s: not tested here\n", isa_name(isa));
      continue;
    }
    // The catalogue (quant.inc) multiplies rows as stored: every type on scalar, only
    // F16/BF16 (fp32/bf16 inputs) on avx512; the integer types' x86 products read 8-row
    // panels and F16/BF16's avx2 ones 16-row panels (tested as
    // Registry/LinearKernelTest.*, Registry/PanelKTest.*, QuantInterleave.*). On an
    // AVX-512 CPU with VNNI and BF16 the avx512 entries must be real, distinct kernels
    // (gemv_kernel(avx512) gives the avx2 line, here none, on a CPU without them).
    for (int i = 0; i < n; ++i) {
      const bool listed = isa == Isa::scalar || (isa == Isa::avx512 && cpu_has_avx512_vnni_bf16() &&
                                                 type_info(types[i])->act != ActKind::q8a);
      EXPECT_EQ(gemv_kernel(types[i], isa) != nullptr, listed) << type_info(types[i])->name << " " << isa_name(isa);
      if (listed && isa == Isa::avx512 && cpu_has_avx512_vnni_bf16()) {
        EXPECT_NE(gemv_kernel(types[i], Isa::avx512), gemv_kernel(types[i], Isa::avx2));
      }
    }
    for (int i = 0; i < n; ++i) {
      if (!gemv_kernel(types[i], isa)) continue;
      const int blk = type_info(types[i])->block;
      // K: one block, odd block counts, a long row; for per-element types also lengths
      // that are not multiples of the vector width (tails).
      std::vector<int64_t> Ks = {blk, 3 * blk, blk * (blk == 256 ? 9 : blk == 32 ? 67 : 2048)};
      if (blk == 1) Ks.insert(Ks.end(), {7, 33, 100, 1001});
      for (int64_t K : Ks)
        for (int M : {1, 3, 9})
          for (int64_t N : {int64_t(1), int64_t(2), int64_t(19)}) check_gemv(types[i], isa, {M, K, N});
      // many inputs (70), odd weight rows
      check_gemv(types[i], isa, {70, 3 * blk, 5});
    }
    printf("  %s: worst error %.2f × 2⁻²⁴·Σ|partial sums| (bound %.0f)\n", isa_name(isa), g_worst, kGemvUlps);
    g_worst = 0;
  }
}

TEST(QuantTypes, ParseAndSizes) {
  WType t;
  EXPECT_TRUE(parse_wtype("Q4_K", &t));
  EXPECT_EQ(t, WType::q4_k);
  EXPECT_TRUE(parse_wtype("bf16", &t));
  EXPECT_EQ(t, WType::bf16);
  EXPECT_TRUE(parse_wtype("Q3_K", &t));
  EXPECT_EQ(t, WType::q3_k);
  EXPECT_TRUE(parse_wtype("IQ4_XS", &t));
  EXPECT_EQ(t, WType::iq4_xs);
  EXPECT_TRUE(parse_wtype("q2_K", &t));
  EXPECT_EQ(t, WType::q2_k);
  EXPECT_FALSE(parse_wtype("iq2_xs", &t));
  EXPECT_FALSE(parse_wtype("iq4_nl", &t));  // read at load only
  EXPECT_FALSE(parse_wtype("", &t));
  EXPECT_EQ(row_bytes(*type_info(WType::q4_k), 4096), size_t(16 * 144));
  EXPECT_EQ(row_bytes(*type_info(WType::q8_0), 64), size_t(68));
  EXPECT_EQ(row_bytes(*type_info(WType::q3_k), 512), size_t(2 * 110));
  EXPECT_EQ(row_bytes(*type_info(WType::iq4_xs), 512), size_t(2 * 136));
  EXPECT_EQ(row_bytes(*type_info(WType::q2_k), 512), size_t(2 * 84));
  EXPECT_EQ(load_only_block_bytes(WType::iq4_nl), 18);
  EXPECT_EQ(act_row_bytes(ActKind::q8a, 64), size_t(80));
}

}  // namespace
}  // namespace headwise::kernels::quant

namespace headwise::kernels::quant {
namespace {

// Random blocks of every type (every bit pattern of the packed fields, with finite
// f16/bf16 scales) dequantized by headwise and, independently, by gguf-py (NumPy) from
// the llama.cpp source node-llama-cpp ships: gguf_dequant_reference.py.
// Q5_0 → Q8_0 is exact: x = d·(q − 16) with q's low 4 bits in the nibbles (element j < 16
// the low nibble of byte j, j + 16 the high one) and its 5th in bit j of qh, against a
// block built by hand, and every (nibble, 5th bit) pair in both halves.
TEST(QuantSemantics, Q5_0ReencodesAsQ8_0Exactly) {
  BlockQ5_0 b{};
  b.d = f32_to_half(0.5f);
  const uint32_t qh = 0x80000001u | 1u << 17;  // elements 0, 17 and 31 have the 5th bit
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.q[j] = uint8_t(j | (15 - j) << 4);
  BlockQ8_0 y{};
  q5_0_to_q8_0(&b, &y, 1);
  EXPECT_EQ(y.d, b.d);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y.q[j], (j | (j == 0 ? 16 : 0)) - 16) << j;
    EXPECT_EQ(y.q[j + 16], ((15 - j) | (j == 1 || j == 15 ? 16 : 0)) - 16) << j + 16;
  }
  for (int v = 0; v < 32; ++v) {
    BlockQ5_0 c{};
    c.d = b.d;
    for (int j = 0; j < 16; ++j) c.q[j] = uint8_t((v & 15) | (v & 15) << 4);
    const uint32_t h = v & 16 ? 0xFFFFFFFFu : 0u;
    std::memcpy(c.qh, &h, 4);
    q5_0_to_q8_0(&c, &y, 1);
    for (int j = 0; j < kQK; ++j) ASSERT_EQ(y.q[j], v - 16) << v << " " << j;
  }
}

// IQ4_NL → Q8_0 is exact: x = d·kIq4Values[q], element j < 16 the low nibble of byte j,
// j + 16 the high one; every nibble value in both halves.
TEST(QuantSemantics, Iq4NlReencodesAsQ8_0Exactly) {
  const int8_t levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};  // ggml's
  for (int v = 0; v < 16; ++v) {
    BlockIQ4_NL b{};
    b.d = f32_to_half(0.25f);
    for (int j = 0; j < 16; ++j) b.q[j] = uint8_t(v | (15 - v) << 4);
    BlockQ8_0 y{};
    iq4_nl_to_q8_0(&b, &y, 1);
    EXPECT_EQ(y.d, b.d);
    for (int j = 0; j < 16; ++j) {
      ASSERT_EQ(y.q[j], levels[v]) << v << " " << j;
      ASSERT_EQ(y.q[j + 16], levels[15 - v]) << v << " " << j;
    }
  }
}

// Q4_1 / Q5_1 → Q8_0 + offsets: x = d·q + m becomes d·(q − o) + c with c = m + o·d (o = 8
// / 16), against blocks built by hand (5th bits of Q5_1 as Q5_0's), and every q value; the
// dequantizers give ggml's float(q)·d + m, which equals d·(q − o) + c exactly where c is
// exact (m and o·d of like magnitude, as here).
TEST(QuantSemantics, Q4_1AndQ5_1ReencodeAsQ8_0PlusOffsets) {
  BlockQ5_1 b{};
  b.d = f32_to_half(0.25f);
  b.m = f32_to_half(-3.5f);
  const uint32_t qh = 0x80000001u | 1u << 17;  // elements 0, 17 and 31 have the 5th bit
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.q[j] = uint8_t(j | (15 - j) << 4);
  BlockQ8_0 y{};
  float c = 0;
  q5_1_to_q8_0(&b, &y, &c, 1);
  EXPECT_EQ(y.d, b.d);
  EXPECT_EQ(c, -3.5f + 16 * 0.25f);
  float ref[kQK];
  dequantize_q5_1(&b, ref, kQK);
  for (int j = 0; j < 16; ++j) {
    const int q0 = j | (j == 0 ? 16 : 0), q1 = (15 - j) | (j == 1 || j == 15 ? 16 : 0);
    EXPECT_EQ(y.q[j], q0 - 16) << j;
    EXPECT_EQ(y.q[j + 16], q1 - 16) << j + 16;
    EXPECT_EQ(ref[j], 0.25f * q0 - 3.5f) << j;
    EXPECT_EQ(ref[j + 16], 0.25f * q1 - 3.5f) << j + 16;
  }
  for (int v = 0; v < 32; ++v) {
    BlockQ5_1 c5{};
    c5.d = f32_to_half(0.375f);
    c5.m = f32_to_half(-7.0f);
    for (int j = 0; j < 16; ++j) c5.q[j] = uint8_t((v & 15) | (v & 15) << 4);
    const uint32_t h = v & 16 ? 0xFFFFFFFFu : 0u;
    std::memcpy(c5.qh, &h, 4);
    q5_1_to_q8_0(&c5, &y, &c, 1);
    dequantize_q5_1(&c5, ref, kQK);
    for (int j = 0; j < kQK; ++j) {
      ASSERT_EQ(y.q[j], v - 16) << v << " " << j;
      ASSERT_EQ(0.375f * y.q[j] + c, ref[j]) << v << " " << j;
      ASSERT_EQ(ref[j], 0.375f * v - 7.0f) << v << " " << j;
    }
    if (v >= 16) continue;
    BlockQ4_1 c4{};
    c4.d = c5.d;
    c4.m = c5.m;
    for (int j = 0; j < 16; ++j) c4.q[j] = uint8_t(v | (15 - v) << 4);
    q4_1_to_q8_0(&c4, &y, &c, 1);
    dequantize_q4_1(&c4, ref, kQK);
    EXPECT_EQ(c, -7.0f + 8 * 0.375f);
    for (int j = 0; j < 16; ++j) {
      ASSERT_EQ(y.q[j], v - 8) << v << " " << j;
      ASSERT_EQ(y.q[j + 16], 15 - v - 8) << v << " " << j;
      ASSERT_EQ(ref[j], 0.375f * v - 7.0f) << v << " " << j;
      ASSERT_EQ(ref[j + 16], 0.375f * (15 - v) - 7.0f) << v << " " << j;
      ASSERT_EQ(0.375f * y.q[j] + c, ref[j]) << v << " " << j;
    }
  }
}

// One case for gguf_dequant_reference.py: the raw rows, headwise's values, the row count.
void write_case(const std::string& base, const std::vector<uint8_t>& w, const std::vector<float>& y, int rows) {
  FILE* f = fopen((base + ".bin").c_str(), "wb");
  fwrite(w.data(), 1, w.size(), f);
  fclose(f);
  f = fopen((base + ".f32").c_str(), "wb");
  fwrite(y.data(), 4, y.size(), f);
  fclose(f);
  f = fopen((base + ".rows").c_str(), "w");
  fprintf(f, "%d", rows);
  fclose(f);
}

TEST(QuantSemantics, DequantizationMatchesGgufPy) {
  const std::string bundle =
      std::string(HEADWISE_SOURCE_DIR) + "/tests/node/node_modules/node-llama-cpp/llama/gitRelease.bundle";
  char tmpl[] = "/tmp/headwise_quant_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::mt19937 g(42);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> nd(0, 1);
  auto finite_half = [&] { return f32_to_half(nd(g) * 0.01f); };
  int n;
  const WType* types = all_types(&n);
  for (int i = 0; i < n; ++i) {
    const TypeInfo* ti = type_info(types[i]);
    const int rows = 3;
    const int64_t K = ti->block == 1 ? 1000 : ti->block * 5;
    std::vector<uint8_t> w(row_bytes(*ti, K) * rows);
    for (uint8_t& b : w) b = uint8_t(byte(g));
    // Scales and per-element halves must be finite; every other bit stays random.
    for (size_t off = 0; off < w.size(); off += ti->block_bytes) {
      uint8_t* blk = w.data() + off;
      auto put = [&](int at, uint16_t h) { std::memcpy(blk + at, &h, 2); };
      switch (types[i]) {
        case WType::f16: put(0, finite_half()); break;
        case WType::bf16: put(0, f32_to_bf16(nd(g))); break;
        case WType::q8_0: case WType::q4_0: put(0, finite_half()); break;
        case WType::q4_k: case WType::q5_k: put(0, finite_half()); put(2, finite_half()); break;
        case WType::q6_k: put(208, finite_half()); break;
        case WType::q3_k: put(108, finite_half()); break;
        case WType::iq4_xs: put(0, finite_half()); break;
        case WType::q2_k: put(80, finite_half()); put(82, finite_half()); break;
        default: break;
      }
    }
    std::vector<float> y(size_t(K) * rows);
    for (int r = 0; r < rows; ++r) ti->dequantize(w.data() + r * row_bytes(*ti, K), y.data() + r * K, K);
    write_case(dir + "/" + ti->name, w, y, rows);
  }
  {  // Q5_0, as the GGUF loader takes it: re-encoded as Q8_0, which is then what is read
    const int rows = 3, blocks = 7;
    std::vector<uint8_t> w(size_t(rows) * blocks * sizeof(BlockQ5_0));
    for (uint8_t& b : w) b = uint8_t(byte(g));
    for (size_t off = 0; off < w.size(); off += sizeof(BlockQ5_0)) {
      const uint16_t h = finite_half();
      std::memcpy(w.data() + off, &h, 2);
    }
    std::vector<uint8_t> q8(size_t(rows) * blocks * sizeof(BlockQ8_0));
    q5_0_to_q8_0(w.data(), q8.data(), int64_t(rows) * blocks);
    std::vector<float> y(size_t(rows) * blocks * kQK);
    type_info(WType::q8_0)->dequantize(q8.data(), y.data(), int64_t(y.size()));
    write_case(dir + "/q5_0", w, y, rows);
    std::vector<float> direct(y.size());  // convert's and the embedding's reading
    dequantize_q5_0(w.data(), direct.data(), int64_t(direct.size()));
    EXPECT_EQ(direct, y);
  }
  {  // IQ4_NL, as the GGUF loader takes it: re-encoded as Q8_0, which is then what is read
    const int rows = 3, blocks = 7;
    std::vector<uint8_t> w(size_t(rows) * blocks * sizeof(BlockIQ4_NL));
    for (uint8_t& b : w) b = uint8_t(byte(g));
    for (size_t off = 0; off < w.size(); off += sizeof(BlockIQ4_NL)) {
      const uint16_t h = finite_half();
      std::memcpy(w.data() + off, &h, 2);
    }
    std::vector<uint8_t> q8(size_t(rows) * blocks * sizeof(BlockQ8_0));
    iq4_nl_to_q8_0(w.data(), q8.data(), int64_t(rows) * blocks);
    std::vector<float> y(size_t(rows) * blocks * kQK);
    type_info(WType::q8_0)->dequantize(q8.data(), y.data(), int64_t(y.size()));
    write_case(dir + "/iq4_nl", w, y, rows);
    std::vector<float> direct(y.size());
    dequantize_iq4_nl(w.data(), direct.data(), int64_t(direct.size()));
    EXPECT_EQ(direct, y);
  }
  // Q4_1 and Q5_1, as the products take them: Q8_0 rows plus one offset a block (the
  // values d·(q − o) + c); and dequantize_q4_1/q5_1 (the embedding's, convert's), apart.
  for (const WType t : {WType::q4_1, WType::q5_1}) {
    const int rows = 3, blocks = 7, bb = load_only_block_bytes(t);
    std::vector<uint8_t> w(size_t(rows) * blocks * bb);
    for (uint8_t& b : w) b = uint8_t(byte(g));
    for (size_t off = 0; off < w.size(); off += bb) {
      const uint16_t d = finite_half(), m = finite_half();
      std::memcpy(w.data() + off, &d, 2);
      std::memcpy(w.data() + off + 2, &m, 2);
    }
    std::vector<uint8_t> q8(size_t(rows) * blocks * sizeof(BlockQ8_0));
    std::vector<float> c(size_t(rows) * blocks);
    (t == WType::q4_1 ? q4_1_to_q8_0 : q5_1_to_q8_0)(w.data(), q8.data(), c.data(), int64_t(rows) * blocks);
    std::vector<float> y(size_t(rows) * blocks * kQK);
    type_info(WType::q8_0)->dequantize(q8.data(), y.data(), int64_t(y.size()));
    for (size_t i = 0; i < y.size(); ++i) y[i] += c[i / kQK];
    const std::string name = t == WType::q4_1 ? "q4_1" : "q5_1";
    write_case(dir + "/" + name, w, y, rows);
    std::vector<float> direct(y.size());
    (t == WType::q4_1 ? dequantize_q4_1 : dequantize_q5_1)(w.data(), direct.data(), int64_t(direct.size()));
    write_case(dir + "/" + name + "_direct", w, direct, rows);
  }
  const std::string cmd = std::string(HEADWISE_PYTHON) + " " + HEADWISE_SOURCE_DIR +
                          "/tests/kernels/gguf_dequant_reference.py --bundle " + bundle + " --dir " + dir;
  const int rc = std::system(cmd.c_str());
  std::system(("rm -rf " + dir).c_str());
  EXPECT_EQ(rc, 0) << cmd;
}

}  // namespace
}  // namespace headwise::kernels::quant
