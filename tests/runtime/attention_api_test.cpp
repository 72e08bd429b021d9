// The public attention API on a tiled 16-bit K/V (AttnKvInput::tile_stride: a session's
// cache layout, positions in tiles of kKvTileRows, each tile every head's K rows and then
// their V rows): the fused kernel on the tiled input against the float64 reference on the
// same elements laid out position-major, for f16 and bf16, decode (one query), several
// queries (a chunk of a prompt whose first query is not on a tile boundary) and a whole
// causal prompt, grouped-query heads, a padded batch (kv_valid), 1 and 2 threads (keys
// split between threads); and malformed tile strides refused with an error naming them.
// The tiles' unused rows (past kv_len) hold NaN: reading one would poison the output.
// Tolerance: max abs error ≤ 1e-5 · max|V|, as the kernel tests (attention_cases.hpp):
// the stored elements are identical, only fp32 summation order and exp2 differ.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "headwise/attention.hpp"
#include "kernels/simd/half.hpp"

namespace headwise::test {
namespace {

struct Case {
  int B, Tq, Tk, Hq, Hkv, D;
  bool padded;  // kv_valid shorter than kv_len for the second sequence
};

struct Data {
  Case c;
  KvType type;
  std::vector<float> q;
  std::vector<uint16_t> k, v;      // position-major (B, Tk, Hkv, D)
  std::vector<uint16_t> tiled;     // per sequence ⌈Tk/16⌉ tiles of [K: Hkv × 16 × D][V: the same]
  int64_t tile = 0, seq = 0;       // elements per tile and per tiled sequence
  std::vector<int32_t> valid;

  Data(const Case& cs, KvType t, unsigned seed) : c(cs), type(t) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    const auto to16 = [&](float x) {
      return t == KvType::f16 ? kernels::f32_to_f16(x) : kernels::f32_to_bf16(x);
    };
    q.resize(size_t(c.B) * c.Tq * c.Hq * c.D);
    for (float& x : q) x = n(rng);
    k.resize(size_t(c.B) * c.Tk * c.Hkv * c.D);
    v.resize(k.size());
    for (auto& x : k) x = to16(n(rng));
    for (auto& x : v) x = to16(2.0f * n(rng));
    const int64_t R = kKvTileRows;
    tile = 2 * R * c.Hkv * c.D;
    seq = (c.Tk + R - 1) / R * tile;
    tiled.assign(size_t(c.B * seq), t == KvType::f16 ? uint16_t(0x7e00) : uint16_t(0x7fc0));  // NaN
    for (int b = 0; b < c.B; ++b)
      for (int p = 0; p < c.Tk; ++p)
        for (int h = 0; h < c.Hkv; ++h) {
          const size_t from = ((size_t(b) * c.Tk + p) * c.Hkv + h) * c.D;
          const size_t to = size_t(b * seq + (p / R) * tile + h * R * c.D + (p % R) * c.D);
          std::copy_n(k.begin() + from, c.D, tiled.begin() + to);
          std::copy_n(v.begin() + from, c.D, tiled.begin() + to + R * c.Hkv * c.D);
        }
    for (int b = 0; b < c.B; ++b) valid.push_back(c.padded && b == 1 ? c.Tk - 21 : c.Tk);
  }
  AttentionParams params(int threads) const {
    AttentionParams a;
    a.batch = c.B, a.q_len = c.Tq, a.kv_len = c.Tk, a.q_heads = c.Hq, a.kv_heads = c.Hkv;
    a.head_dim = c.D, a.kv_type = type, a.threads = threads;
    if (c.padded) a.kv_valid = valid.data();
    return a;
  }
  AttnInput qin() const {
    return {q.data(), int64_t(c.Tq) * c.Hq * c.D, int64_t(c.Hq) * c.D, c.D};
  }
  AttnKvInput plain(const std::vector<uint16_t>& x) const {
    return {x.data(), int64_t(c.Tk) * c.Hkv * c.D, int64_t(c.Hkv) * c.D, c.D};
  }
  AttnKvInput tiled_k() const { return {tiled.data(), seq, c.D, kKvTileRows * c.D, tile}; }
  AttnKvInput tiled_v() const {
    return {tiled.data() + kKvTileRows * c.Hkv * c.D, seq, c.D, kKvTileRows * c.D, tile};
  }
  AttnOutput out(std::vector<float>& o) const {
    o.assign(q.size(), -7.0f);
    return {o.data(), int64_t(c.Tq) * c.Hq * c.D, int64_t(c.Hq) * c.D, c.D};
  }
  double max_abs_v() const {
    double m = 0;
    for (uint16_t x : v)
      m = std::max(m, double(std::fabs(type == KvType::f16 ? kernels::f16_to_f32(x) : kernels::bf16_to_f32(x))));
    return m;
  }
};

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}

TEST(AttentionApiTiledKv, KernelOnTilesMatchesReferenceOnPositionMajor) {
  const Case cases[] = {
      {2, 1, 100, 8, 2, 64, false},   // decode, GQA 8/2, a part-filled last tile
      {2, 1, 600, 8, 2, 64, true},    // decode, long enough for the keys to split between threads
      {2, 37, 100, 8, 2, 64, false},  // a chunk: queries at 63..99, the first inside a tile
      {1, 50, 50, 4, 4, 32, false},   // a whole causal prompt, no GQA
      {2, 3, 64, 6, 3, 80, true},     // several decode rows, whole tiles, a padded sequence
  };
  for (const KvType t : {KvType::f16, KvType::bf16})
    for (const Case& c : cases) {
      const Data d(c, t, unsigned(c.Tk * 13 + c.Tq + int(t)));
      std::vector<float> ref, ref_tiled;
      ASSERT_TRUE(attention_reference(d.params(1), d.qin(), d.plain(d.k), d.plain(d.v), d.out(ref)).ok());
      // The reference reads the tiles as it reads position-major rows: identical results.
      ASSERT_TRUE(attention_reference(d.params(1), d.qin(), d.tiled_k(), d.tiled_v(), d.out(ref_tiled)).ok());
      EXPECT_EQ(max_diff(ref, ref_tiled), 0.0);
      const double tol = 1e-5 * d.max_abs_v();
      for (int threads : {1, 2}) {
        std::vector<float> got, plain;
        const std::string what = std::string(kv_type_name(t)) + " B" + std::to_string(c.B) + " Tq" +
                                 std::to_string(c.Tq) + " Tk" + std::to_string(c.Tk) + " threads " +
                                 std::to_string(threads);
        ASSERT_TRUE(attention(d.params(threads), d.qin(), d.tiled_k(), d.tiled_v(), d.out(got)).ok()) << what;
        EXPECT_LE(max_diff(got, ref), tol) << what;
        ASSERT_TRUE(attention(d.params(threads), d.qin(), d.plain(d.k), d.plain(d.v), d.out(plain)).ok()) << what;
        EXPECT_LE(max_diff(got, plain), tol) << what << ": tiled against plain";
      }
    }
}

TEST(AttentionApiTiledKv, MalformedTileStridesAreInvalidArguments) {
  const Data d({1, 1, 20, 2, 2, 16, false}, KvType::f16, 5);
  std::vector<float> o;
  const auto error_of = [&](const AttentionParams& a, AttnKvInput k, AttnKvInput v) {
    const Status st = attention(a, d.qin(), k, v, d.out(o));
    EXPECT_EQ(st.code(), StatusCode::invalid_argument) << st.message();
    return st.message();
  };
  AttnKvInput k = d.tiled_k(), v = d.tiled_v();
  k.tile_stride = -1;
  std::string m = error_of(d.params(1), k, v);
  EXPECT_NE(m.find("tile_stride"), std::string::npos) << m;
  EXPECT_NE(m.find("for k"), std::string::npos) << m;
  m = error_of(d.params(1), d.tiled_k(), d.plain(d.v));
  EXPECT_NE(m.find("must both be tiled or both plain"), std::string::npos) << m;
  EXPECT_NE(m.find("k has a tile_stride and v has none"), std::string::npos) << m;
  m = error_of(d.params(1), d.plain(d.k), d.tiled_v());
  EXPECT_NE(m.find("v has a tile_stride and k has none"), std::string::npos) << m;
  AttentionParams f32 = d.params(1);
  f32.kv_type = KvType::f32;
  m = error_of(f32, d.tiled_k(), d.tiled_v());
  EXPECT_NE(m.find("16-bit kv_type"), std::string::npos) << m;
  // The reference validates the same way.
  const Status st = attention_reference(f32, d.qin(), d.tiled_k(), d.tiled_v(), d.out(o));
  EXPECT_EQ(st.code(), StatusCode::invalid_argument) << st.message();
}

}  // namespace
}  // namespace headwise::test
