// Projection (graph/projection.hpp): y = x·W + b through the plan's choices — oneDNN
// primitives for the row classes, the registry kernel for the rest — against a float64
// reference, on every ISA this CPU has, for row counts on and around the class edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "graph/projection.hpp"
#include "graph/weight_arena.hpp"
#include "graph/weights.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"
#include "kernels/simd/half.hpp"
#include "tests/status_assert.hpp"
#include "tests/test_files.hpp"

namespace headwise::graph {
namespace {

using kernels::Isa;

struct Case {
  int M, K, N;
  bool bias, out_in, strided;
};

std::vector<Isa> usable_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar})
    if (kernels::may_use(isa)) out.push_back(isa);
  return out;
}

void check(const Case& c, Isa isa) {
  std::mt19937 g(c.M * 131 + c.K * 7 + c.N);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(size_t(c.K) * c.N), b(c.N);
  for (float& x : w) x = u(g);
  for (float& x : b) x = u(g);
  // out_in: W stored [N][K] (element (k, n) at n·K + k); else [K][N].
  const int64_t sk = c.out_in ? 1 : c.N, sn = c.out_in ? c.K : 1;
  std::unique_ptr<Projection> pl;
  Status s = Projection::create_f32(w.data(), c.K, c.N, sk, sn, c.bias ? b.data() : nullptr, isa, &pl);
  ASSERT_TRUE(s.ok()) << s.message();
  const int64_t ldx = c.K + (c.strided ? 5 : 0), ldy = c.N + (c.strided ? 3 : 0);
  std::vector<float> x(size_t(c.M) * ldx), y(size_t(c.M) * ldy, NAN);
  for (float& v : x) v = u(g);
  struct alignas(64) Line {
    char b[64];
  };
  // scratch_bytes(M) and a guard after it that run() must leave alone (it sizes its
  // staging passes by the same rules as scratch_bytes).
  const size_t need = pl->scratch_bytes(c.M), guard = 4096;
  std::vector<Line> scratch((need + guard) / 64 + 1);
  auto* bytes = reinterpret_cast<unsigned char*>(scratch.data());
  std::fill(bytes + need, bytes + scratch.size() * 64, 0xAB);
  for (int threads : {1, 2}) {
    std::fill(y.begin(), y.end(), NAN);
    s = pl->run(x.data(), ldx, y.data(), ldy, c.M, threads, scratch.data());
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(std::all_of(bytes + need, bytes + scratch.size() * 64, [](unsigned char v) { return v == 0xAB; }))
        << "run() wrote past scratch_bytes(" << c.M << ") = " << need;
    double worst = 0;
    for (int r = 0; r < c.M; ++r)
      for (int n = 0; n < c.N; ++n) {
        double ref = c.bias ? b[n] : 0.0, mag = std::fabs(ref);
        for (int k = 0; k < c.K; ++k) {
          const double p = double(x[r * ldx + k]) * w[k * sk + n * sn];
          ref += p;
          mag += std::fabs(p);
        }
        // fp32 accumulation over K terms: error ≤ ~K·2⁻²⁴·Σ|terms|; we allow 1e-6·Σ|terms|·√K
        const double err = std::fabs(y[r * ldy + n] - ref) / (mag * std::sqrt(double(c.K)) * 1e-6 + 1e-30);
        worst = std::max(worst, std::isnan(y[r * ldy + n]) ? INFINITY : err);
      }
    EXPECT_LE(worst, 1.0) << "M " << c.M << " K " << c.K << " N " << c.N << " isa "
                          << kernels::isa_name(isa) << " threads " << threads << " impl "
                          << pl->implementation(c.M);
  }
}

TEST(Projection, RowCountsAroundTheClassEdgesMatchReference) {
  for (Isa isa : usable_isas())
    for (int M : {1, 2, 3, 5, 8, 9, 15, 16, 17, 31, 33, 64, 100})
      for (auto [K, N] : {std::pair{16, 17}, {24, 64}, {100, 300}})
        for (bool bias : {false, true}) check({M, K, N, bias, true, false}, isa);
}

TEST(Projection, LayoutsAndStrides) {
  for (Isa isa : usable_isas())
    for (int M : {1, 4, 33})
      for (bool out_in : {false, true})
        for (bool strided : {false, true}) check({M, 200, 300, true, out_in, strided}, isa);
}

// Strided rows are staged in passes of the largest class whose staging fits 1 MiB: here
// (K 32 + N 2048) floats a row, passes of 64 rows (128 would take 1.06 MB), 300 rows as
// 4 × 64 + 32 + the small kernel's 12.
TEST(Projection, StridedRowsInPassesOfBoundedStaging) {
  check({300, 32, 2048, true, true, true}, kernels::detected_isa());
  std::vector<float> w(32 * 2048, 0.5f);
  std::unique_ptr<Projection> pl;
  ASSERT_TRUE(Projection::create_f32(w.data(), 32, 2048, 1, 32, nullptr, kernels::detected_isa(), &pl).ok());
  EXPECT_LE(pl->scratch_bytes(4096), size_t(2) << 20) << "staging grows with the rows";
  check({Projection::kMaxClassRows + 21, 32, 48, true, true, true}, kernels::detected_isa());
}

TEST(Projection, MoreRowsThanTheLargestClass) {
  check({Projection::kMaxClassRows + 21, 32, 48, true, true, false}, kernels::detected_isa());
}

TEST(Projection, RowsSplitIntoClassesThenTheSmallKernel) {
  std::vector<float> w(64 * 64, 0.25f);
  std::unique_ptr<Projection> pl;
  const Status s = Projection::create_f32(w.data(), 64, 64, 1, 64, nullptr, kernels::detected_isa(), &pl);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_FALSE(pl->small_kernel().empty()) << "no registry kernel for oneDNN's layout";
  EXPECT_EQ(pl->implementation(1), pl->small_kernel() + "×1");
  const std::string impl = pl->implementation(100);  // 64 + 32 + 4
  EXPECT_NE(impl.find("×64 + "), std::string::npos) << impl;
  EXPECT_NE(impl.find("×32 + " + pl->small_kernel() + "×4"), std::string::npos) << impl;
}

TEST(Projection, NeverTheReferenceMatmul) {
  for (auto [K, N] : {std::pair{768, 768}, {768, 2304}, {3072, 768}, {64, 512}, {172, 64}}) {
    std::vector<float> w(size_t(K) * N, 0.5f);
    std::unique_ptr<Projection> pl;
    const Status s = Projection::create_f32(w.data(), K, N, 1, K, nullptr, kernels::detected_isa(), &pl);
    ASSERT_TRUE(s.ok()) << s.message();
    for (int M : {1, 8, 9, 100, 1024}) {
      const std::string impl = pl->implementation(M);
      EXPECT_EQ(impl.find("ref"), std::string::npos) << K << "x" << N << " M " << M << ": " << impl;
    }
  }
}

// Runs pl on M random rows (strided: ldx = K + 5, ldy = N + 3) with 1 and 2 threads and
// expects every output within the f32 bound, 1e-6·Σ|terms|·√K, of the float64 reference
// bias(n) + Σ_k in_r(k)·wt(r, n, k), where in(r, x_r, in_r) and wt give the values the
// path multiplies row r's inputs and the weights as; nothing may be written past N.
// split_rel adds split_rel·Σ|terms| to the bound (a path that splits its operands).
template <class In, class Wt>
void expect_reference(const Projection& pl, int M, int K, int N, const float* bias, bool strided, std::mt19937& g,
                      In&& in, Wt&& wt, const std::string& what, double split_rel = 0) {
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t ldx = K + (strided ? 5 : 0), ldy = N + (strided ? 3 : 0);
  std::vector<float> x(size_t(M) * ldx), y(size_t(M) * ldy);
  for (float& v : x) v = u(g);
  std::vector<double> xv(K);
  struct alignas(64) Line {
    char b[64];
  };
  std::vector<Line> scratch(pl.scratch_bytes(M) / 64 + 1);
  for (int threads : {1, 2}) {
    std::fill(y.begin(), y.end(), NAN);
    const Status s = pl.run(x.data(), ldx, y.data(), ldy, M, threads, scratch.data());
    ASSERT_TRUE(s.ok()) << s.message();
    double worst = 0;
    for (int r = 0; r < M; ++r) {
      in(r, x.data() + r * ldx, xv.data());
      for (int n = 0; n < N; ++n) {
        double ref = bias ? bias[n] : 0.0, mag = std::fabs(ref);
        for (int k = 0; k < K; ++k) {
          const double p = xv[k] * wt(r, n, k);
          ref += p;
          mag += std::fabs(p);
        }
        const double err = std::fabs(y[r * ldy + n] - ref) / (mag * (std::sqrt(double(K)) * 1e-6 + split_rel) + 1e-30);
        worst = std::max(worst, std::isnan(y[r * ldy + n]) ? INFINITY : err);
      }
      for (int64_t n = N; n < ldy; ++n) ASSERT_TRUE(std::isnan(y[r * ldy + n])) << "wrote past N";
    }
    EXPECT_LE(worst, 1.0) << what << " threads " << threads << " impl " << pl.implementation(M);
  }
}

// BF16 and F16 weights ([N][K] as stored), against a float64 reference of the stored
// weights times the inputs. BF16: oneDNN's bf16 matmul on the copy packed at plan time
// for row classes (AVX512-BF16 CPUs), or on the stored rows in place where that matmul
// runs on AMX (Widened16::create_bf16_rows; forced both ways below: "as stored"), or,
// where the bf16 dot product is slow (cpu_bf16_dot_slow, forced both ways below), its f32
// matmul on the rows widened per call (widened16.hpp); F16: the widened rows on an avx512 plan; the registry kernel
// below the classes (and for F16 elsewhere). The bf16 paths round the inputs to bf16
// and so does the reference for them; the widened rows and F16's kernels keep them
// fp32, and so does the reference (a reference of rounded inputs misses those by ~2⁻⁹
// per product, ~1000× the bound). Products of 16-bit weights and bf16 (or with fp32
// inputs, products computed in fp32 from exact operands) differ only by the fp32
// rounding of products and sums: the bound is the f32 test's, 1e-6·Σ|terms|·√K.
void check_half(kernels::WeightType type, int M, int K, int N, bool bias, bool strided, Isa isa, bool dot_slow,
                bool rows_path) {
  namespace q = kernels::quant;
  const bool f16 = type == kernels::WeightType::f16;
  std::mt19937 g(M * 17 + K * 3 + N);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> w(size_t(K) * N);
  std::vector<float> b(N);
  for (uint16_t& v : w) v = f16 ? kernels::f32_to_f16(u(g)) : q::f32_to_bf16(u(g));
  for (float& v : b) v = u(g);
  std::unique_ptr<Projection> pl;
  Status s = Projection::create_typed(type, w.data(), K, N, bias ? b.data() : nullptr, isa, &pl);
  ASSERT_TRUE(s.ok()) << s.message();
  const bool onednn = isa == Isa::avx512 && (f16 || q::cpu_has_avx512_vnni_bf16());
  const std::string impl = pl->implementation(M);
  const bool widened = impl.find("widened") != std::string::npos;
  // BF16 rows in place, and F16 split into bf16 hi + lo, on the AMX panels where usable
  // and K is whole tile steps
  const bool amx_panels = kernels::amx_usable() && K % 32 == 0;
  const bool amx_rows = onednn && !f16 && rows_path && amx_panels, amx_f16 = onednn && f16 && amx_panels;
  if (M >= Projection::kMinClassRows) {
    EXPECT_EQ(impl.find("oneDNN") != std::string::npos, onednn && !amx_rows && !amx_f16) << impl;
    EXPECT_EQ(impl.find("AMX bf16 tiles") != std::string::npos, amx_rows || amx_f16) << impl;
    EXPECT_EQ(impl.find("split into bf16 hi + lo") != std::string::npos, amx_f16) << impl;
    // F16: always widened; BF16: its rows in place when asked for (on AMX by default), else
    // widened when the dot is slow and oneDNN's bf16 matmul is not on AMX
    if (onednn) {
      const bool in_place = !f16 && rows_path;
      EXPECT_EQ(impl.find("as stored") != std::string::npos, in_place) << impl;
      EXPECT_EQ(widened, (f16 && !amx_f16) || (!in_place && dot_slow && impl.find("amx") == std::string::npos)) << impl;
    }
  }
  EXPECT_EQ(impl.find("ref"), std::string::npos) << impl;
  const int exact_rows = f16 ? M : widened ? M / 16 * 16 : 0;  // rows whose inputs stay fp32
  expect_reference(
      *pl, M, K, N, bias ? b.data() : nullptr, strided, g,
      [&](int r, const float* x, double* xv) {
        for (int k = 0; k < K; ++k) xv[k] = r < exact_rows ? x[k] : q::bf16_to_f32(q::f32_to_bf16(x[k]));
      },
      [&](int, int n, int k) {
        const uint16_t wv = w[size_t(n) * K + k];
        return double(f16 ? kernels::f16_to_f32(wv) : q::bf16_to_f32(wv));
      },
      std::string(kernels::weight_type_name(type)) + " M " + std::to_string(M) + " K " + std::to_string(K) + " N " +
          std::to_string(N) + " isa " + kernels::isa_name(isa),
      // F16 split: each input within 2⁻¹⁷ of hi + lo, the dropped lo·lo below 2⁻¹⁸ of a
      // term: 2⁻¹⁶·Σ|terms| covers both (the weights split exactly)
      amx_f16 && M >= Projection::kMinClassRows ? std::ldexp(1.0, -16) : 0.0);
}

// M 1..15: the registry kernel alone; 17, 33: a class and its remainder; 293: classes
// 256 + 32 and 5 rows left. N 300: two 128-column chunks and a tail of 44; K 2100:
// 64-column chunks.
void check_half_shapes(kernels::WeightType type, bool dot_slow, bool rows_path = false) {
  for (Isa isa : usable_isas())
    for (int M : {1, 15, 16, 17, 33, 100, Projection::kMaxBf16ClassRows + 37})
      for (auto [K, N] : {std::pair{64, 17}, {200, 130}, {96, 300}, {2100, 70}})
        for (bool strided : {false, true})
          check_half(type, M, K, N, /*bias=*/M % 2 == 1, strided, isa, dot_slow, rows_path);
}

// The rows in place run twice where the CPU has AMX: on oneDNN's matmul and on the AMX
// panels (gemm_bf16_amx.hpp; K 64 and 96 — 200 and 2100 are not whole tile steps and
// stay on oneDNN), with the same numbers.
TEST(Projection, Bf16WeightsMatchReferenceAroundTheClassEdges) {
  for (int path : {0, 1, 2}) {  // the blocked copy; rows in place on oneDNN; on AMX
    const bool rows_path = path > 0;
    if (path == 2 && !kernels::set_amx_override(true)) break;
    if (path == 1) kernels::set_amx_override(false);
    Projection::set_dequant_prefill_override(rows_path);
    for (bool dot_slow : {false, true}) {
      kernels::quant::set_bf16_dot_slow_override(dot_slow);
      check_half_shapes(kernels::WeightType::bf16, dot_slow, rows_path);
    }
  }
  kernels::clear_amx_override();
  kernels::quant::set_bf16_dot_slow_override(-1);
  Projection::set_dequant_prefill_override(-1);
}

// Where the CPU has AMX, twice: widened to fp32 on oneDNN, and split into bf16 hi + lo
// on the AMX panels (K 64 and 96; gemm_bf16_amx.hpp, amx_split_*).
TEST(Projection, F16WeightsMatchReferenceAroundTheClassEdges) {
  kernels::set_amx_override(false);
  check_half_shapes(kernels::WeightType::f16, false);
  if (kernels::set_amx_override(true)) check_half_shapes(kernels::WeightType::f16, false);
  kernels::clear_amx_override();
}

// Quantized weights repacked into panels (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) in prefill on oneDNN's bf16 matmul
// over chunks dequantized per call (Widened16::create_dequant; on by default where that
// matmul runs on AMX, forced here wherever oneDNN has a bf16 one): from
// kDequantMinRows rows, the rows of whole 16-row classes multiply the dequantized
// weights rounded to bf16 by the inputs rounded to bf16, so their float64 reference
// rounds both the same way (RNE) and only the fp32 order of the sums differs: the f32
// test's bound, 1e-6·Σ|terms|·√K. The rows left (M % 16, or all below the minimum) run
// on the int8 tiles: their reference takes the inputs as prepared int8 blocks
// (activation_values), with the same bound. M 1100: passes of 1024 and 64 rows and 12
// left; N 300 (y dense, a bias): all columns dequantized at once into one matmul that
// writes y; N 29 and 70 (y strided): one chunk with a part-filled panel, and K 2112 and
// 2304's 64-column chunks. Forced off, the path is never taken. Where the CPU has AMX,
// every case runs twice: on oneDNN's matmul, and on the AMX panels (kernels::
// set_amx_override; gemm_bf16_amx.hpp), whose numbers are the same (bf16 operands, fp32
// sums), from kAmxDequantMinRows rows — there N 29 is one part-filled panel, N 70 three,
// N 300 ten (with 2 threads, chunks of 2 and a last of 1 whose rows split); M 79 and 144
// end on 16 rows, and K 2112 (66 tile steps) gets input rows 2144 apart.
void check_dequant(kernels::WeightType type, int M, int K, int N, bool bias, bool strided, bool amx) {
  namespace q = kernels::quant;
  const q::WType wt = type == kernels::WeightType::q8_0   ? q::WType::q8_0
                      : type == kernels::WeightType::q4_0 ? q::WType::q4_0
                      : type == kernels::WeightType::q4_k ? q::WType::q4_k
                      : type == kernels::WeightType::q5_k ? q::WType::q5_k
                                                          : q::WType::q6_k;
  const q::TypeInfo& ti = *q::type_info(wt);
  std::mt19937 g(M * 17 + K * 3 + N);
  std::uniform_real_distribution<float> u(-1, 1);
  const size_t rb = q::row_bytes(ti, K);
  std::vector<uint8_t> w(rb * N);
  std::vector<float> row(K), b(N), wd(size_t(K) * N);
  for (int n = 0; n < N; ++n) {
    for (float& v : row) v = u(g);
    ti.quantize(row.data(), w.data() + rb * n, K);
    ti.dequantize(w.data() + rb * n, wd.data() + size_t(n) * K, K);
  }
  for (float& v : b) v = u(g);
  std::unique_ptr<Projection> pl;
  Status s = Projection::create_typed(type, w.data(), K, N, bias ? b.data() : nullptr, Isa::avx512, &pl);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string impl = pl->implementation(M);
  const bool on = M >= (amx ? Projection::kAmxDequantMinRows : Projection::kDequantMinRows);
  ASSERT_EQ(impl.find("dequantized to bf16") != std::string::npos, on) << impl;
  ASSERT_EQ(impl.find("AMX bf16 tiles") != std::string::npos, on && amx) << impl;
  EXPECT_EQ(impl.find("ref"), std::string::npos) << impl;
  const int taken = on ? M / 16 * 16 : 0;
  std::vector<uint8_t> xa(q::act_row_bytes(q::ActKind::q8a, K));
  expect_reference(
      *pl, M, K, N, bias ? b.data() : nullptr, strided, g,
      [&](int r, const float* x, double* xv) {
        if (r < taken) {
          for (int k = 0; k < K; ++k) xv[k] = q::bf16_to_f32(q::f32_to_bf16(x[k]));
        } else {
          q::prepare_activations(q::ActKind::q8a, x, xa.data(), K);
          q::activation_values(q::ActKind::q8a, xa.data(), xv, K);
        }
      },
      [&](int r, int n, int k) {  // rows past `taken` run on the int8 tiles: the weights as stored
        const float wv = wd[size_t(n) * K + k];
        return double(r < taken ? q::bf16_to_f32(q::f32_to_bf16(wv)) : wv);
      },
      std::string(kernels::weight_type_name(type)) + " M " + std::to_string(M) + " K " + std::to_string(K) + " N " +
          std::to_string(N));
}

TEST(Projection, QuantWeightsDequantizedToBf16MatchReference) {
  if (!kernels::may_use(Isa::avx512) || !kernels::quant::cpu_has_avx512_vnni_bf16())
    GTEST_SKIP() << "the dequantized prefill runs on avx512 plans with AVX512-BF16";
  Projection::set_dequant_prefill_override(1);
  using WT = kernels::WeightType;
  for (bool amx : {false, true}) {
    if (amx && !kernels::set_amx_override(true)) {
      std::printf("[ note ] no AMX here: the dequantized panels on AMX tiles are not tested\n");
      break;
    }
    if (!amx) kernels::set_amx_override(false);
    for (auto type : {WT::q8_0, WT::q4_0, WT::q4_k, WT::q5_k, WT::q6_k}) {
      const bool k_quant = type != WT::q8_0 && type != WT::q4_0;  // K: whole super-blocks of 256
      for (int M : {1, Projection::kAmxDequantMinRows - 1, Projection::kAmxDequantMinRows, 79,
                    Projection::kDequantMinRows - 1, Projection::kDequantMinRows, 144, 300, 1100})
        for (auto [K, N] : {std::pair{k_quant ? 256 : 64, 29}, {k_quant ? 512 : 96, 300}, {k_quant ? 2304 : 2112, 70}}) {
          if (M == 1100 && K > 512) continue;  // (the float64 reference's time)
          check_dequant(type, M, K, N, /*bias=*/N == 300 || M % 2 == 1, /*strided=*/N != 300, amx);
        }
    }
  }
  kernels::clear_amx_override();
  Projection::set_dequant_prefill_override(0);
  for (auto type : {WT::q8_0, WT::q4_0, WT::q4_k, WT::q5_k, WT::q6_k}) {
    std::vector<uint8_t> w(272 * 64, 0);  // 64 rows of 256 elements of any of them (Q8_0: 272 bytes)
    std::unique_ptr<Projection> pl;
    ASSERT_TRUE(Projection::create_typed(type, w.data(), 256, 64, nullptr, Isa::avx512, &pl).ok());
    EXPECT_EQ(pl->implementation(512).find("dequantized"), std::string::npos) << pl->implementation(512);
  }
  Projection::set_dequant_prefill_override(-1);
}

// The AMX panels' chunks (graph/widened16.cpp, amx_pass): with K 2304 a chunk holds 14
// panels, 7 a thread on 2 threads, each packed and multiplied by its thread with no wait
// between chunks; N 992 (31 panels) ends on a chunk of 3, split 1 + 2 — other ranges than
// the chunks' before, so a barrier first — and N 928 (29) on a chunk of 1, whose rows the
// threads split. Against the float64 reference as above, on 1 and 2 threads.
TEST(Projection, AmxChunksOfOwnRangesThenOtherSplits) {
  if (!kernels::may_use(Isa::avx512) || !kernels::quant::cpu_has_avx512_vnni_bf16() ||
      !kernels::set_amx_override(true))
    GTEST_SKIP() << "no AMX here";
  Projection::set_dequant_prefill_override(1);
  for (int N : {992, 928, 14 * 32 * 2}) check_dequant(kernels::WeightType::q4_k, 80, 2304, N, /*bias=*/true, false, true);
  kernels::clear_amx_override();
  Projection::set_dequant_prefill_override(-1);
}

// Typed weights repacked at load (Q4_K's 8-row panels) into their own mapping, here
// 2.14 MB: one 2 MiB huge page and a 4 KiB-page tail (graph/projection.cpp), with a last
// panel of 3 rows. The x86 entries read the panels, the scalar entry the GGUF rows as
// stored: both take the same int8 inputs and exact integer block sums, so only the fp32
// order of the per-block scale products differs: |Δy| ≤ 1e-5·max|y| (measured ≤ 5e-7).
TEST(Projection, RepackedTypedWeightsInTheirMappingMatchTheStoredRows) {
  const int K = 2048, N = 1803;
  const kernels::quant::TypeInfo& ti = *kernels::quant::type_info(kernels::quant::WType::q4_k);
  const size_t rb = kernels::quant::row_bytes(ti, K);
  std::vector<uint8_t> w(rb * N);
  std::mt19937 g(7);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> row(K), bias(N);
  for (int n = 0; n < N; ++n) {
    if (n < 64) {
      for (float& v : row) v = nd(g);
      ti.quantize(row.data(), w.data() + n * rb, K);
    } else {  // 64 distinct rows, each repeat with its own scales (d, dmin: f16 words 0, 1)
      std::copy_n(w.data() + (n % 64) * rb, rb, w.data() + n * rb);
      w[n * rb + 1] ^= uint8_t(n & 3);
    }
  }
  for (float& b : bias) b = nd(g);
  std::unique_ptr<Projection> ref;
  ASSERT_TRUE(Projection::create_typed(kernels::WeightType::q4_k, w.data(), K, N, bias.data(), Isa::scalar, &ref).ok());
  for (Isa isa : usable_isas()) {
    if (isa == Isa::scalar) continue;
    std::unique_ptr<Projection> p;
    const Status s = Projection::create_typed(kernels::WeightType::q4_k, w.data(), K, N, bias.data(), isa, &p);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_GE(p->weight_bytes(), size_t(2) << 20) << "the case should cross a huge page";
    for (int M : {1, 3}) {
      std::vector<float> x(size_t(M) * K), y0(size_t(M) * N), y1(size_t(M) * N, NAN);
      for (float& v : x) v = nd(g);
      struct alignas(64) Line {
        char b[64];
      };
      std::vector<Line> scratch(std::max(p->scratch_bytes(M), ref->scratch_bytes(M)) / 64 + 1);
      ASSERT_TRUE(ref->run(x.data(), K, y0.data(), N, M, 1, scratch.data()).ok());
      for (int threads : {1, 2}) {
        ASSERT_TRUE(p->run(x.data(), K, y1.data(), N, M, threads, scratch.data()).ok());
        double big = 0, worst = 0;
        for (size_t i = 0; i < y0.size(); ++i) big = std::max(big, std::fabs(double(y0[i])));
        for (size_t i = 0; i < y0.size(); ++i)
          worst = std::max(worst, std::isnan(y1[i]) ? INFINITY : std::fabs(double(y1[i]) - y0[i]));
        EXPECT_LE(worst, 1e-5 * big) << kernels::isa_name(isa) << " M " << M << " threads " << threads << " impl "
                                     << p->implementation(M);
      }
    }
  }
}

// Weights read from a mapped file: a projection keeps its own copy (oneDNN's blocked f32
// layout, a kernel's repacked panels, or the stored rows copied out: bf16, scalar Q8_0)
// and releases the mapped pages it copied, so the process does not hold both; its
// products are bit-identical to the same projection made from heap memory (the bytes it
// copied were the file's).
TEST(Projection, CopiesOfMappedWeightsReleaseTheirPages) {
  namespace q = kernels::quant;
  const int K = 256, N = 256, M = 3;
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> wf(size_t(K) * N), x(size_t(M) * K), row(K);
  for (float& v : wf) v = u(g);
  for (float& v : x) v = u(g);
  const q::TypeInfo& ti = *q::type_info(q::WType::q8_0);
  const size_t rb = q::row_bytes(ti, K);
  std::string q8(rb * N, '\0');
  for (int n = 0; n < N; ++n) ti.quantize(wf.data() + size_t(n) * K, &q8[size_t(n) * rb], K);
  ASSERT_EQ(q8.size() % size_t(::sysconf(_SC_PAGESIZE)), 0u) << "whole pages, so all are released";

  std::vector<uint16_t> bf(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) bf[i] = q::f32_to_bf16(wf[i]);

  test::TempDir dir;
  test::spit(dir.file("bf16.bin"), std::string(reinterpret_cast<const char*>(bf.data()), bf.size() * 2));
  test::spit(dir.file("q8_0.bin"), q8);
  test::spit(dir.file("f32.bin"), std::string(reinterpret_cast<const char*>(wf.data()), wf.size() * 4));
  for (Isa isa : usable_isas()) {
    std::unique_ptr<MappedFile> mq, mf, mb;
    HW_ASSERT_OK(MappedFile::open(dir.file("q8_0.bin"), &mq));
    HW_ASSERT_OK(MappedFile::open(dir.file("f32.bin"), &mf));
    HW_ASSERT_OK(MappedFile::open(dir.file("bf16.bin"), &mb));
    for (const auto* m : {mq.get(), mf.get(), mb.get()}) {
      unsigned sum = 0;
      for (size_t i = 0; i < m->size(); i += 4096) sum += m->data()[i];  // fault the pages in
      ASSERT_EQ(test::resident_bytes_of_mapping(m->data()), int64_t(m->size())) << sum;
    }
    std::unique_ptr<Projection> pq, pq_heap, pf, pf_heap, pb, pb_heap;
    HW_ASSERT_OK(Projection::create_typed(kernels::WeightType::bf16, mb->data(), K, N, nullptr, isa, &pb));
    HW_ASSERT_OK(Projection::create_typed(kernels::WeightType::bf16, bf.data(), K, N, nullptr, isa, &pb_heap));
    HW_ASSERT_OK(Projection::create_typed(kernels::WeightType::q8_0, mq->data(), K, N, nullptr, isa, &pq));
    HW_ASSERT_OK(Projection::create_typed(kernels::WeightType::q8_0, q8.data(), K, N, nullptr, isa, &pq_heap));
    HW_ASSERT_OK(Projection::create_f32(reinterpret_cast<const float*>(mf->data()), K, N, 1, K, nullptr, isa, &pf));
    HW_ASSERT_OK(Projection::create_f32(wf.data(), K, N, 1, K, nullptr, isa, &pf_heap));
    // Repacked (x86 Q8_0), packed by oneDNN (f32) or copied as stored (bf16, scalar Q8_0).
    EXPECT_EQ(test::resident_bytes_of_mapping(mq->data()), 0) << kernels::isa_name(isa) << " " << pq->implementation(1);
    EXPECT_EQ(test::resident_bytes_of_mapping(mf->data()), 0) << kernels::isa_name(isa);
    EXPECT_EQ(test::resident_bytes_of_mapping(mb->data()), 0) << kernels::isa_name(isa);
    struct alignas(64) Line {
      char b[64];
    };
    for (auto [a, b] : {std::pair{pq.get(), pq_heap.get()}, {pf.get(), pf_heap.get()}, {pb.get(), pb_heap.get()}}) {
      std::vector<Line> scratch(std::max(a->scratch_bytes(M), b->scratch_bytes(M)) / 64 + 1);
      std::vector<float> ya(size_t(M) * N, NAN), yb(size_t(M) * N, NAN);
      HW_ASSERT_OK(a->run(x.data(), K, ya.data(), N, M, 1, scratch.data()));
      HW_ASSERT_OK(b->run(x.data(), K, yb.data(), N, M, 1, scratch.data()));
      EXPECT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.size() * 4)) << kernels::isa_name(isa) << " " << a->implementation(M);
    }
  }
}

// The plan's way: every projection's own copy in one WeightArena, one after the other
// in the order they are made (the order decode runs them), with the same products as
// projections made on their own.
TEST(Projection, CopiesInAnArenaFollowEachOtherAndMatch) {
  namespace q = kernels::quant;
  const int K = 256, N = 200, M = 2;
  std::mt19937 g(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> wf(size_t(K) * N), x(size_t(M) * K);
  for (float& v : wf) v = u(g);
  for (float& v : x) v = u(g);
  const q::TypeInfo& ti = *q::type_info(q::WType::q4_k);
  const size_t rb = q::row_bytes(ti, K);
  std::string q4(rb * N, '\0');
  for (int n = 0; n < N; ++n) ti.quantize(wf.data() + size_t(n) * K, &q4[size_t(n) * rb], K);
  test::TempDir dir;
  test::spit(dir.file("q4_k.bin"), q4);
  for (Isa isa : usable_isas()) {
    std::unique_ptr<MappedFile> mq;
    HW_ASSERT_OK(MappedFile::open(dir.file("q4_k.bin"), &mq));
    WeightArena arena;
    std::unique_ptr<Projection> a_f32, a_q4, own_f32, own_q4;
    HW_ASSERT_OK(Projection::create_f32(wf.data(), K, N, 1, K, nullptr, isa, &a_f32, &arena));
    HW_ASSERT_OK(Projection::create_typed(kernels::WeightType::q4_k, mq->data(), K, N, nullptr, isa, &a_q4, &arena));
    HW_ASSERT_OK(Projection::create_f32(wf.data(), K, N, 1, K, nullptr, isa, &own_f32));
    HW_ASSERT_OK(Projection::create_typed(kernels::WeightType::q4_k, q4.data(), K, N, nullptr, isa, &own_q4));
    // f32: oneDNN's packed copy; Q4_K: the panels (x86) or the rows copied out of the file.
    const size_t r64 = (a_f32->weight_bytes() + 63) / 64 * 64;
    EXPECT_EQ(arena.used_bytes(), r64 + (a_q4->weight_bytes() + 63) / 64 * 64) << kernels::isa_name(isa);
    EXPECT_EQ(arena.mapped_bytes(), WeightArena::kChunkBytes);
    struct alignas(64) Line {
      char b[64];
    };
    for (auto [a, b] : {std::pair{a_f32.get(), own_f32.get()}, {a_q4.get(), own_q4.get()}}) {
      std::vector<Line> scratch(std::max(a->scratch_bytes(M), b->scratch_bytes(M)) / 64 + 1);
      std::vector<float> ya(size_t(M) * N, NAN), yb(size_t(M) * N, NAN);
      HW_ASSERT_OK(a->run(x.data(), K, ya.data(), N, M, 1, scratch.data()));
      HW_ASSERT_OK(b->run(x.data(), K, yb.data(), N, M, 1, scratch.data()));
      EXPECT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.size() * 4)) << kernels::isa_name(isa) << " " << a->implementation(M);
    }
  }
}

}  // namespace
}  // namespace headwise::graph
