// The 16-bit KV-cache conversions: the scalar ones (kernels/simd/half.hpp) against
// independent oracles, and every ISA's vector converters (kv_convert.inc) against the
// scalar ones, bit for bit.
//   f16:  GCC's _Float16 (libgcc's soft-float conversions, IEEE round to nearest even)
//   bf16: the nearest of the two neighbouring bf16 values, chosen in double, ties to even
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/convert/kv_convert.hpp"
#include "kernels/simd/half.hpp"

namespace headwise::kernels {
namespace {

bool is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

// Inputs that probe every rounding case: all f16 values, the exact midpoints between
// neighbours (ties) and one fp32 ulp either side, fp32 specials, and random bit patterns.
std::vector<float> probe_inputs() {
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (is_nan16(uint16_t(h))) continue;
    const float a = f16_to_f32(uint16_t(h)), b = f16_to_f32(uint16_t(h + 1));
    x.push_back(a);
    if ((h & 0x7fff) < 0x7bff && !(h & 0x8000) && std::isfinite(b)) {
      const float mid = float((double(a) + double(b)) / 2);  // exact in fp32
      x.push_back(mid);
      x.push_back(std::nextafter(mid, 0.0f));
      x.push_back(std::nextafter(mid, INFINITY));
      x.push_back(-mid);
    }
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, 65504.0f, 65519.996f, 65520.0f, 1e30f,
                  -1e30f, 0x1p-24f, 0x1p-25f, std::nextafter(0x1p-25f, 1.0f), 0x1p-26f, 1e-40f,
                  3.0e38f, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()})
    x.push_back(f);
  std::mt19937 gen(7);
  for (int i = 0; i < 300000; ++i) x.push_back(f32_from_bits(uint32_t(gen())));
  return x;
}

TEST(Half, F16WidenMatchesCompiler) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    _Float16 c;
    const uint16_t bits = uint16_t(h);
    std::memcpy(&c, &bits, 2);
    const float want = float(c), got = f16_to_f32(bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(f32_bits(got), f32_bits(want)) << "f16 bits " << h;
  }
}

TEST(Half, F16RoundingMatchesCompiler) {
  for (float x : probe_inputs()) {
    const uint16_t got = f32_to_f16(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(is_nan16(got)) << x;
      ASSERT_TRUE(got & 0x200) << "quiet";
      ASSERT_EQ(got & 0x8000, (f32_bits(x) >> 16) & 0x8000) << "sign kept";
      continue;
    }
    const _Float16 c = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &c, 2);
    ASSERT_EQ(got, want) << "x=" << x << " bits " << std::hex << f32_bits(x);
  }
}

TEST(Half, Bf16RoundingIsNearestEven) {
  for (float x : probe_inputs()) {
    const uint16_t got = f32_to_bf16(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(bf16_to_f32(got))) << "NaN preserved";
      ASSERT_TRUE(got & 0x40) << "quiet";
      continue;
    }
    // The two bf16 values around x: truncation lo, and hi one step away from zero.
    // IEEE rounds as if the exponent were unbounded, so a hi of inf counts as ±2^128.
    const uint16_t lo = uint16_t(f32_bits(x) >> 16), hi = uint16_t(lo + 1);
    auto value = [](uint16_t h) {
      return (h & 0x7f80) == 0x7f80 ? std::copysign(std::ldexp(1.0, 128), bf16_to_f32(h))
                                    : double(bf16_to_f32(h));
    };
    const double dlo = std::fabs(double(x) - value(lo)), dhi = std::fabs(double(x) - value(hi));
    uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1 ? hi : lo);
    if (std::isinf(x)) want = lo;
    ASSERT_EQ(got, want) << "x=" << x << " bits " << std::hex << f32_bits(x);
  }
}

TEST(KvConvert, EveryIsaMatchesScalarBitForBit) {
  std::vector<float> x = probe_inputs();
  // NaNs with payloads, both signs
  for (uint32_t p : {0x7f800001u, 0x7fc00000u, 0xffa5a5a5u, 0x7fbfffffu}) x.push_back(f32_from_bits(p));
  int ran = 0;
  for (const KvConvert& c : kv_convert_kernels()) {  // every line of kv_convert.inc
    if (!may_use(c.isa)) {
      std::cout << "[ SKIPPED  ] " << c.name << ": CPU lacks " << isa_name(c.isa) << "\n";
      continue;
    }
    for (int64_t n : {int64_t(x.size()), int64_t(1), int64_t(7), int64_t(17), int64_t(33)}) {
      std::vector<uint16_t> h(n), b(n);
      std::vector<float> wh(n), wb(n);
      c.f32_to_f16(x.data(), h.data(), n);
      c.f32_to_bf16(x.data(), b.data(), n);
      c.f16_to_f32(h.data(), wh.data(), n);
      c.bf16_to_f32(b.data(), wb.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(h[i], f32_to_f16(x[i])) << c.name << " f16 of bits " << std::hex << f32_bits(x[i]);
        ASSERT_EQ(b[i], f32_to_bf16(x[i])) << c.name << " bf16 of bits " << std::hex << f32_bits(x[i]);
        ASSERT_EQ(f32_bits(wh[i]), f32_bits(f16_to_f32(h[i]))) << c.name;
        ASSERT_EQ(f32_bits(wb[i]), f32_bits(bf16_to_f32(b[i]))) << c.name;
      }
    }
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

}  // namespace
}  // namespace headwise::kernels
