// GPTQ and AWQ layers (formats/hf_quantized.cpp) re-encoded as blocks: the blocks'
// values (graph::to_f32) against w(n, k) = scale[g][n]·(q(k, n) − zero[g][n]) computed
// here from the packed integers by the formats' own description (AutoGPTQ: k packed in
// an int32 column-wise, zeros stored less 1; AWQ: columns 0 2 4 6 1 3 5 7 per int32),
// equal bit for bit (every such value is exact in f32); the type chosen (Q4_0/Q8_0 when
// every zero is the centre, else Q4_0C/Q8_0C); act-order layers whose groups interleave
// the rows stored sorted by group with that order (TensorView::perm); and hostile layers
// refused by name.
#include "formats/hf_quantized.hpp"

#include <gtest/gtest.h>

#include <random>

#include "kernels/quant/blocks.hpp"

namespace headwise::formats {
namespace {

namespace q = kernels::quant;
using graph::DType;
using graph::TensorView;

// A layer's integers and scales, and views of them.
struct Layer {
  int K, N, G, bits;
  bool awq;
  std::vector<int> qv, zero, group;  // q[n·K + k], zero[g·N + n] (actual), group[k]
  std::vector<uint16_t> scale;       // [g·N + n]
  std::vector<int32_t> qweight, qzeros, g_idx;
  std::vector<TensorView> views(const std::string& p) const {
    auto view = [](const std::string& name, DType t, std::vector<int64_t> shape, const void* d, size_t n) {
      TensorView v;
      v.name = name, v.dtype = t, v.shape = std::move(shape), v.data = static_cast<const uint8_t*>(d), v.nbytes = n;
      return v;
    };
    const int f = 32 / bits, zf = awq ? 8 : f;
    std::vector<TensorView> out = {
        view(p + ".qweight", DType::i32, awq ? std::vector<int64_t>{K, N / 8} : std::vector<int64_t>{K / f, N},
             qweight.data(), qweight.size() * 4),
        view(p + ".qzeros", DType::i32, {G, N / zf}, qzeros.data(), qzeros.size() * 4),
        view(p + ".scales", DType::f16, {G, N}, scale.data(), scale.size() * 2)};
    if (!g_idx.empty()) out.push_back(view(p + ".g_idx", DType::i32, {K}, g_idx.data(), g_idx.size() * 4));
    return out;
  }
};

// stored zero = zero − `less` (GPTQ v1: 1).
Layer make_layer(int K, int N, int gs, int bits, bool awq, bool centred, bool act_order, int less, uint32_t seed) {
  std::mt19937 g(seed);
  Layer l{K, N, gs > 0 ? K / gs : 1, bits, awq, {}, {}, {}, {}, {}, {}, {}};
  const int top = (1 << bits) - 1, centre = 1 << (bits - 1), f = 32 / bits;
  std::uniform_int_distribution<int> qd(0, top), zd(less, top);
  std::uniform_real_distribution<float> sd(0.001f, 0.1f);
  l.qv.resize(size_t(K) * N);
  for (int& v : l.qv) v = qd(g);
  l.zero.resize(size_t(l.G) * N);
  for (int& z : l.zero) z = centred ? centre : zd(g);
  l.scale.resize(size_t(l.G) * N);
  for (uint16_t& s : l.scale) s = q::f32_to_half(sd(g));
  // Groups: k / gs, or runs of 32 rows shuffled among them (act-order).
  std::vector<int> runs(K / 32);
  for (int r = 0; r < K / 32; ++r) runs[r] = r;
  if (act_order) std::shuffle(runs.begin(), runs.end(), g);
  l.group.resize(K);
  for (int k = 0; k < K; ++k) l.group[k] = gs > 0 ? runs[k / 32] * 32 / gs : 0;
  if (act_order || (!awq && seed % 2)) l.g_idx.assign(l.group.begin(), l.group.end());
  static const int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // nibble i holds column 8c + kAwqOrder[i]
  if (awq) {
    l.qweight.assign(size_t(K) * N / 8, 0);
    for (int k = 0; k < K; ++k)
      for (int c = 0; c < N / 8; ++c)
        for (int i = 0; i < 8; ++i)
          l.qweight[size_t(k) * (N / 8) + c] |= int32_t(uint32_t(l.qv[size_t(8 * c + kAwqOrder[i]) * K + k]) << (4 * i));
    l.qzeros.assign(size_t(l.G) * N / 8, 0);
    for (int gg = 0; gg < l.G; ++gg)
      for (int c = 0; c < N / 8; ++c)
        for (int i = 0; i < 8; ++i)
          l.qzeros[size_t(gg) * (N / 8) + c] |= int32_t(uint32_t(l.zero[size_t(gg) * N + 8 * c + kAwqOrder[i]]) << (4 * i));
  } else {
    l.qweight.assign(size_t(K / f) * N, 0);
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n)
        l.qweight[size_t(k / f) * N + n] |= int32_t(uint32_t(l.qv[size_t(n) * K + k]) << (bits * (k % f)));
    l.qzeros.assign(size_t(l.G) * (N / f), 0);
    for (int gg = 0; gg < l.G; ++gg)
      for (int n = 0; n < N; ++n)
        l.qzeros[size_t(gg) * (N / f) + n / f] |= int32_t(uint32_t(l.zero[size_t(gg) * N + n] - less) << (bits * (n % f)));
  }
  return l;
}

void expect_exact(const Layer& l, const HfQuantConfig& cfg, DType want, const std::string& what) {
  std::vector<TensorView> views = l.views("model.layers.0.mlp.up_proj");
  std::deque<std::vector<uint8_t>> owned;
  const Status s = convert_hf_quantized(cfg, "dir", uint64_t(1) << 30, &views, &owned);
  ASSERT_TRUE(s.ok()) << what << ": " << s.message();
  ASSERT_EQ(views.size(), 1u) << what;
  const TensorView& v = views[0];
  EXPECT_EQ(v.name, "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(v.dtype, want) << what;
  ASSERT_EQ(v.shape, (std::vector<int64_t>{l.N, l.K}));
  std::vector<float> got(size_t(l.K) * l.N);
  graph::to_f32(v.dtype, v.data, got.size(), got.data());
  // Columns stored in order, or (act-order by row) sorted by group: column j is perm[j].
  std::vector<char> seen(size_t(l.K), 0);
  for (int j = 0; j < l.K && v.perm; ++j) {
    ASSERT_TRUE(v.perm[j] >= 0 && v.perm[j] < l.K && !seen[size_t(v.perm[j])]) << what << ": perm[" << j << "]";
    seen[size_t(v.perm[j])] = 1;
    if (j) {
      ASSERT_LE(l.group[v.perm[j - 1]], l.group[v.perm[j]]) << what << ": sorted by group";
    }
  }
  for (int n = 0; n < l.N; ++n)
    for (int j = 0; j < l.K; ++j) {
      const int k = v.perm ? v.perm[j] : j;
      const int g = l.group[k];
      const double w = double(q::half_to_f32(l.scale[size_t(g) * l.N + n])) *
                       double(l.qv[size_t(n) * l.K + k] - l.zero[size_t(g) * l.N + n]);
      ASSERT_EQ(double(got[size_t(n) * l.K + j]), w) << what << ": w(" << n << ", " << k << ")";
    }
}

TEST(HfQuantized, GptqAndAwqLayersBecomeBlocksOfTheSameValues) {
  HfQuantConfig v1{HfQuantConfig::Method::gptq, 4, 64, true}, v2 = v1, awq{HfQuantConfig::Method::awq, 4, 64, false};
  v2.zeros_less_one = false;
  expect_exact(make_layer(128, 40, 64, 4, false, true, false, 1, 1), v1, DType::q4_0, "GPTQ 4 symmetric");
  expect_exact(make_layer(128, 40, 64, 4, false, false, false, 1, 2), v1, DType::q4_0c, "GPTQ 4 zeros");
  expect_exact(make_layer(256, 24, 64, 4, false, false, true, 1, 3), v1, DType::q4_0c, "GPTQ 4 act-order");
  expect_exact(make_layer(128, 40, 64, 4, false, false, false, 0, 4), v2, DType::q4_0c, "GPTQ v2 zeros");
  HfQuantConfig g8 = v1, g8pc = v1;
  g8.bits = 8, g8.group_size = 32, g8pc.bits = 8, g8pc.group_size = -1;
  expect_exact(make_layer(96, 20, 32, 8, false, true, false, 1, 5), g8, DType::q8_0, "GPTQ 8 symmetric");
  expect_exact(make_layer(96, 20, -1, 8, false, false, false, 1, 6), g8pc, DType::q8_0c, "GPTQ 8 per column");
  expect_exact(make_layer(128, 48, 64, 4, true, false, false, 0, 7), awq, DType::q4_0c, "AWQ");
  expect_exact(make_layer(128, 48, 64, 4, true, true, false, 0, 8), awq, DType::q4_0, "AWQ centred");
  // AutoGPTQ's act-order: the groups interleave row by row (g of row k = its rank // 64).
  Layer a = make_layer(256, 24, 64, 4, false, false, false, 1, 10);
  std::vector<int> rank(256);
  for (int k = 0; k < 256; ++k) rank[k] = (k * 97 + 13) % 256;  // a permutation (97 odd)
  for (int k = 0; k < 256; ++k) a.group[k] = rank[k] / 64;
  a.g_idx.assign(a.group.begin(), a.group.end());
  expect_exact(a, v1, DType::q4_0c, "GPTQ act-order by row");
}

TEST(HfQuantized, HostileLayersAreRefusedByName) {
  const HfQuantConfig cfg{HfQuantConfig::Method::gptq, 4, 64, true};
  const Layer l = make_layer(128, 40, 64, 4, false, false, false, 1, 9);
  auto run = [&](std::vector<TensorView> views, uint64_t budget = uint64_t(1) << 30) {
    std::deque<std::vector<uint8_t>> owned;
    return convert_hf_quantized(cfg, "dir", budget, &views, &owned);
  };
  std::vector<TensorView> v = l.views("m.q_proj");
  v.erase(v.begin() + 2);  // no scales
  Status s = run(v);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'m.q_proj.scales' is missing"), std::string::npos) << s.message();
  v = l.views("m.q_proj");
  v[1].shape = {2, 4};  // qzeros of the wrong shape
  s = run(v);
  EXPECT_NE(s.message().find("qzeros [2, 4] do not fit"), std::string::npos) << s.message();
  v = l.views("m.q_proj");
  v[0].dtype = DType::f32;
  s = run(v);
  EXPECT_NE(s.message().find("'m.q_proj.qweight' is F32"), std::string::npos) << s.message();
  // Many layers on the same bytes (a hostile file): the budget stops them.
  v.clear();
  for (int i = 0; i < 8; ++i)
    for (const TensorView& t : l.views("m.l" + std::to_string(i))) v.push_back(t);
  s = run(v, 4 * l.qweight.size() * 4);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensors overlap"), std::string::npos) << s.message();
  // A non-finite scale (f16 +inf, then a NaN).
  for (uint16_t bad : {uint16_t(0x7C00), uint16_t(0x7E01)}) {
    Layer nan = l;
    nan.scale[size_t(1) * nan.N + 5] = bad;
    s = run(nan.views("m.q_proj"));
    EXPECT_NE(s.message().find("scales[1][5] is not a finite number"), std::string::npos) << s.message();
  }
  // A layer also stored in floats.
  v = l.views("m.q_proj");
  TensorView dup = v[2];
  dup.name = "m.q_proj.weight";
  v.push_back(dup);
  s = run(v);
  EXPECT_NE(s.message().find("both a quantized weight"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace headwise::formats
