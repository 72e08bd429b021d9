// Q4_1 and Q5_1 projections (Projection::create_offset_blocks): Q8_0 rows of q − o plus
// (Q4_0C and Q8_0C, GPTQ/AWQ weights with zero points: Q4_0 / Q8_0 rows split off their
// blocks, the same way)
// an f32 product of the blocks' offsets on the inputs' block sums, against a float64
// reference of ggml's weights d·q + m, on every ISA this CPU has, row counts below and
// on oneDNN's classes and the dequantized (AMX) prefill, with and without biases,
// strided rows, on 1 and 2 threads, and scratch_bytes(M) of scratch (a guard after it
// stays untouched). They never run as a gated pair (the gate's offsets go before its
// swiglu); in a group (run_projections, decode) they run as slices whose outputs equal
// run()'s bit for bit, the offsets' plain f32 rows sliced with the weights' panels.
//
// The reference takes the inputs as the Q8_0 product takes them (int8 blocks, or bf16
// where the prefill multiplies dequantized bf16 weights: then the Q8_0 part of each
// weight, d·(q − o), is rounded to bf16 too), and the offsets' term on the fp32 inputs.
// Bound: 1e-6·√K·Σ|terms| as every projection test (fp32 sums). An offset dropped, on
// the wrong block or of the wrong sign moves y by ~|c|·|Σ x| over a block, orders of
// magnitude past it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "graph/projection.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::graph {
namespace {

namespace q = kernels::quant;
using kernels::Isa;

struct alignas(64) Line {
  unsigned char b[64];
};

// N rows of K/32 random Q4_1 or Q5_1 blocks: random quants, d ~ 0.01–0.05, m ≈ −o·d
// (a block centred near 0, as a quantizer makes them) with a random shift.
// The base type each is multiplied as, its split and dequantizations.
struct Way {
  kernels::WeightType base;
  size_t base_block;
  void (*split)(const void*, void*, float*, int64_t);
  void (*dequantize)(const void*, float*, int64_t);
};
Way way_of(q::WType t) {
  switch (t) {
    case q::WType::q4_1: return {kernels::WeightType::q8_0, sizeof(q::BlockQ8_0), q::q4_1_to_q8_0, q::dequantize_q4_1};
    case q::WType::q5_1: return {kernels::WeightType::q8_0, sizeof(q::BlockQ8_0), q::q5_1_to_q8_0, q::dequantize_q5_1};
    case q::WType::q4_0c: return {kernels::WeightType::q4_0, sizeof(q::BlockQ4_0), q::q4_0c_split, q::dequantize_q4_0c};
    default: return {kernels::WeightType::q8_0, sizeof(q::BlockQ8_0), q::q8_0c_split, q::dequantize_q8_0c};
  }
}
const char* name_of(q::WType t) {
  return t == q::WType::q4_1 ? "Q4_1" : t == q::WType::q5_1 ? "Q5_1" : t == q::WType::q4_0c ? "Q4_0C" : "Q8_0C";
}

std::vector<uint8_t> random_blocks(q::WType t, int K, int N, std::mt19937& g) {
  const int bb = q::load_only_block_bytes(t), o = t == q::WType::q4_1 ? 8 : 16;
  if (t == q::WType::q4_0c || t == q::WType::q8_0c) {
    // GPTQ/AWQ: d ~ 0.01–0.05, zero z anywhere in the range, c = d·(centre − z) (exact)
    const int centre = t == q::WType::q4_0c ? 8 : 128;
    std::uniform_int_distribution<int> byte(0, 255), zero(0, 2 * centre - 1);
    std::uniform_real_distribution<float> u(0.01f, 0.05f);
    std::vector<uint8_t> w(size_t(N) * (K / 32) * bb);
    for (uint8_t& v : w) v = uint8_t(byte(g));
    for (size_t at = 0; at < w.size(); at += bb) {
      const uint16_t dh = q::f32_to_half(u(g));
      const float c = q::half_to_f32(dh) * float(centre - zero(g));
      std::memcpy(w.data() + at, &dh, 2);
      std::memcpy(w.data() + at + bb - 4, &c, 4);
    }
    return w;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u(0.01f, 0.05f), shift(-0.3f, 0.3f);
  std::vector<uint8_t> w(size_t(N) * (K / 32) * bb);
  for (uint8_t& v : w) v = uint8_t(byte(g));
  for (size_t at = 0; at < w.size(); at += bb) {
    const float d = u(g);
    const uint16_t dh = q::f32_to_half(d), mh = q::f32_to_half(-o * d + shift(g) * d * o);
    std::memcpy(w.data() + at, &dh, 2);
    std::memcpy(w.data() + at + 2, &mh, 2);
  }
  return w;
}

// y of `p` (made from `w`) for M random rows against the reference above; `taken`: rows
// on the dequantized bf16 prefill (the first M/16·16 when it runs).
void check(const Projection& p, q::WType t, const std::vector<uint8_t>& w, int M, int K, int N, const float* bias,
           bool strided, int taken, std::mt19937& g, const std::string& what) {
  const int kb = K / 32, o = t == q::WType::q4_1 ? 8 : 16;
  // The weights as ggml dequantizes them, and their Q8_0 parts and offsets.
  std::vector<float> wd(size_t(K) * N), w8(size_t(K) * N), c(size_t(kb) * N);
  const Way way = way_of(t);
  std::vector<uint8_t> q8(size_t(kb) * N * way.base_block);
  way.dequantize(w.data(), wd.data(), int64_t(K) * N);
  way.split(w.data(), q8.data(), c.data(), int64_t(kb) * N);
  q::type_info(way.base == kernels::WeightType::q4_0 ? q::WType::q4_0 : q::WType::q8_0)
      ->dequantize(q8.data(), w8.data(), int64_t(K) * N);
  for (size_t i = 0; i < wd.size(); ++i)  // the split is exact here (m and o·d alike)
    ASSERT_EQ(w8[i] + c[i / 32], wd[i]) << what << ": weight " << i << " (o " << o << ")";
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t ldx = K + (strided ? 5 : 0), ldy = N + (strided ? 3 : 0);
  std::vector<float> x(size_t(M) * ldx), y(size_t(M) * ldy);
  for (float& v : x) v = u(g) + 0.2f;  // block sums away from 0: the offsets' term matters
  const size_t need = p.scratch_bytes(M), guard = 4096;
  std::vector<Line> scratch((need + guard) / 64 + 1);
  auto* bytes = reinterpret_cast<unsigned char*>(scratch.data());
  std::vector<uint8_t> xa(q::act_row_bytes(q::ActKind::q8a, K));
  std::vector<double> xv(K);
  for (int threads : {1, 2}) {
    std::fill(y.begin(), y.end(), NAN);
    std::fill(bytes + need, bytes + scratch.size() * 64, 0xAB);
    const Status s = p.run(x.data(), ldx, y.data(), ldy, M, threads, scratch.data());
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(std::all_of(bytes + need, bytes + scratch.size() * 64, [](unsigned char v) { return v == 0xAB; }))
        << what << ": run() wrote past scratch_bytes(" << M << ")";
    double worst = 0;
    for (int r = 0; r < M; ++r) {
      const float* xr = x.data() + r * ldx;
      if (r < taken) {
        for (int k = 0; k < K; ++k) xv[k] = q::bf16_to_f32(q::f32_to_bf16(xr[k]));
      } else {
        q::prepare_activations(q::ActKind::q8a, xr, xa.data(), K);
        q::activation_values(q::ActKind::q8a, xa.data(), xv.data(), K);
      }
      for (int n = 0; n < N; ++n) {
        double ref = bias ? bias[n] : 0.0, mag = std::fabs(ref);
        for (int k = 0; k < K; ++k) {
          const float wk = w8[size_t(n) * K + k];
          const double main = xv[k] * (r < taken ? q::bf16_to_f32(q::f32_to_bf16(wk)) : wk);
          const double off = double(xr[k]) * c[size_t(n) * kb + k / 32];
          ref += main + off;
          mag += std::fabs(main) + std::fabs(off);
        }
        const double err = std::fabs(y[r * ldy + n] - ref) / (mag * std::sqrt(double(K)) * 1e-6 + 1e-30);
        worst = std::max(worst, std::isnan(y[r * ldy + n]) ? INFINITY : err);
      }
      for (int64_t n = N; n < ldy; ++n) ASSERT_TRUE(std::isnan(y[r * ldy + n])) << what << ": wrote past N";
    }
    EXPECT_LE(worst, 1.0) << what << " M " << M << " threads " << threads << " impl " << p.implementation(M);
  }
}

TEST(ProjectionOffsets, Q4_1Q5_1Q4_0CAndQ8_0CMatchTheirWeightsOnEveryIsa) {
  Projection::set_dequant_prefill_override(0);  // the int8 products at every row count here
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar}) {
    if (!kernels::may_use(isa)) continue;
    for (q::WType t : {q::WType::q4_1, q::WType::q5_1, q::WType::q4_0c, q::WType::q8_0c})
      for (auto [K, N] : {std::pair{32, 17}, {224, 29}, {896, 70}}) {
        std::mt19937 g(K * 3 + N + int(t));
        const std::vector<uint8_t> w = random_blocks(t, K, N, g);
        std::vector<float> b(N);
        std::uniform_real_distribution<float> u(-1, 1);
        for (float& v : b) v = u(g);
        for (bool bias : {false, true}) {
          std::unique_ptr<Projection> p;
          const Status s = Projection::create_offset_blocks(t, w.data(), K, N, bias ? b.data() : nullptr, isa, &p);
          ASSERT_TRUE(s.ok()) << s.message();
          EXPECT_EQ(p->type(), way_of(t).base);
          const std::string what = std::string(name_of(t)) + " " + kernels::isa_name(isa) +
                                   " K " + std::to_string(K) + " N " + std::to_string(N) + (bias ? " bias" : "");
          for (int M : {1, 3, 17, 80, 1100}) {  // 17: 16 rows added by oneDNN, 1 staged; 1100: two passes
            if (M == 1100 && K != 32) continue;  // (the float64 reference's time)
            EXPECT_NE(p->implementation(M).find(" + offsets "), std::string::npos) << p->implementation(M);
            EXPECT_EQ(p->can_slice(M), M < 16) << what;  // below oneDNN's classes, as any projection
            EXPECT_EQ(p->gated_rows(*p, M), 0) << what;
            check(*p, t, w, M, K, N, bias ? b.data() : nullptr, /*strided=*/M % 2 == 1, 0, g, what);
          }
        }
      }
  }
  Projection::set_dequant_prefill_override(-1);
}

// The offsets' term: oneDNN adds it to y in place for whole classes of rows (16, 32, ...,
// passes of up to 1024); only the rest of M, fewer than 16 rows, is staged (15 × N
// floats). N 40000 (a vocabulary), M 120: 112 rows in place and 8 staged.
TEST(ProjectionOffsets, WideProjectionsInPassesOfBoundedStaging) {
  const Isa isa = kernels::active_isa();
  const int K = 64, N = 40000, M = 120;
  Projection::set_dequant_prefill_override(0);  // (read when a projection is made)
  std::mt19937 g(5);
  const std::vector<uint8_t> w = random_blocks(q::WType::q5_1, K, N, g);
  std::unique_ptr<Projection> p;
  ASSERT_TRUE(Projection::create_offset_blocks(q::WType::q5_1, w.data(), K, N, nullptr, isa, &p).ok());
  std::vector<uint8_t> q8(size_t(N) * (K / 32) * sizeof(q::BlockQ8_0));
  std::vector<float> c(size_t(N) * (K / 32));
  q::q5_1_to_q8_0(w.data(), q8.data(), c.data(), int64_t(N) * (K / 32));
  std::unique_ptr<Projection> p8;
  ASSERT_TRUE(Projection::create_typed(kernels::WeightType::q8_0, q8.data(), K, N, nullptr, isa, &p8).ok());
  // The offsets' share: the block sums, 15 rows of staging and oneDNN's own (≤ 4 MiB here).
  for (int rows : {M, 1000, 5000})
    EXPECT_LT(p->scratch_bytes(rows),
              p8->scratch_bytes(rows) + size_t(std::min(rows, 1024)) * (K / 32) * 4 + size_t(15) * N * 4 + (size_t(4) << 20))
        << rows;
  check(*p, q::WType::q5_1, w, M, K, N, nullptr, false, 0, g, "Q5_1 N 40000");
  Projection::set_dequant_prefill_override(-1);
}

// On an avx512 plan with AVX512-BF16, prefill from kDequantMinRows (kAmxDequantMinRows on
// AMX) multiplies the Q8_0 part dequantized to bf16; the offsets stay fp32.
TEST(ProjectionOffsets, DequantizedPrefillMatchesTheReference) {
  if (!kernels::may_use(Isa::avx512) || !q::cpu_has_avx512_vnni_bf16())
    GTEST_SKIP() << "the dequantized prefill runs on avx512 plans with AVX512-BF16";
  Projection::set_dequant_prefill_override(1);
  for (q::WType t : {q::WType::q4_1, q::WType::q5_1}) {
    const int K = 896, N = 70;
    std::mt19937 g(11 + int(t));
    const std::vector<uint8_t> w = random_blocks(t, K, N, g);
    std::unique_ptr<Projection> p;
    ASSERT_TRUE(Projection::create_offset_blocks(t, w.data(), K, N, nullptr, Isa::avx512, &p).ok());
    for (int M : {Projection::kDequantMinRows + 9}) {
      const std::string impl = p->implementation(M);
      ASSERT_NE(impl.find("dequantized to bf16"), std::string::npos) << impl;
      check(*p, t, w, M, K, N, nullptr, true, M / 16 * 16, g, std::string("dequantized ") + impl);
    }
  }
  Projection::set_dequant_prefill_override(-1);
}

// run_projections: a group with offsets projections (and a Q8_0 one) runs as slices of
// one parallel region, on every ISA: each output equals that projection's run(), bit
// for bit, for thread counts that put share boundaries inside the projections, with a
// ShareBalance that moves them. N 200: slices of 16 columns (the offsets' plain rows; the
// scalar Q8_0 rows alone would take 1) and a part-filled last one.
TEST(ProjectionOffsets, GroupsSliceThemAsTheirRun) {
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar}) {
    if (!kernels::may_use(isa)) continue;
    const int K = 224, N = 200;
    std::mt19937 g(9);
    const std::vector<uint8_t> w1 = random_blocks(q::WType::q4_1, K, N, g), w2 = random_blocks(q::WType::q5_1, K, N, g);
    std::vector<uint8_t> w3(size_t(N) * (K / 32) * sizeof(q::BlockQ8_0));
    std::vector<float> c3(size_t(N) * (K / 32));
    q::q5_1_to_q8_0(w2.data(), w3.data(), c3.data(), int64_t(N) * (K / 32));
    std::unique_ptr<Projection> a, b, c;
    ASSERT_TRUE(Projection::create_offset_blocks(q::WType::q4_1, w1.data(), K, N, nullptr, isa, &a).ok());
    ASSERT_TRUE(Projection::create_offset_blocks(q::WType::q5_1, w2.data(), K, N, nullptr, isa, &b).ok());
    ASSERT_TRUE(Projection::create_typed(kernels::WeightType::q8_0, w3.data(), K, N, nullptr, isa, &c).ok());
    EXPECT_EQ(a->slice_rows() % 16, 0) << kernels::isa_name(isa);
    const Projection* ps[] = {a.get(), b.get(), c.get()};
    for (int M : {1, 3}) {
      ASSERT_TRUE(a->can_slice(M) && b->can_slice(M)) << kernels::isa_name(isa);
      std::uniform_real_distribution<float> u(-1, 1);
      std::vector<float> x(size_t(M) * K);
      for (float& v : x) v = u(g);
      std::vector<std::vector<float>> want(3, std::vector<float>(size_t(M) * N));
      for (int threads : {2, 3, 7}) {
        const size_t need = std::max({a->scratch_bytes(M), b->scratch_bytes(M), projections_scratch_bytes(ps, 3, M, threads)});
        std::vector<Line> scratch(need / 64 + 1);
        for (int i = 0; i < 3; ++i) ASSERT_TRUE(ps[i]->run(x.data(), K, want[i].data(), N, M, 2, scratch.data()).ok());
        ShareBalance balance;
        for (int round = 0; round < 2; ++round) {
          std::vector<std::vector<float>> got(3, std::vector<float>(size_t(M) * N, NAN));
          float* ys[] = {got[0].data(), got[1].data(), got[2].data()};
          const int64_t lds[] = {N, N, N};
          ASSERT_TRUE(run_projections(ps, 3, x.data(), K, ys, lds, M, threads, scratch.data(), scratch.size() * 64,
                                      round ? &balance : nullptr)
                          .ok());
          for (int i = 0; i < 3; ++i)
            EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4), 0)
                << kernels::isa_name(isa) << " M " << M << " threads " << threads << " projection " << i;
        }
      }
    }
  }
}

// set_input_permutation (GPTQ act-order layers, columns stored sorted by group): run()
// and run_slice() on x equal, bit for bit, the same projection without the permutation
// on x gathered by hand, x'(k) = x(perm[k]) — every ISA, Q4_0C (offsets: their block
// sums are the gathered inputs' too) and a plain Q8_0 projection, decode and prefill rows,
// strided inputs, scratch_bytes / slice_scratch_bytes of scratch. A non-permutation is
// refused.
TEST(ProjectionOffsets, AnInputPermutationGathersTheInputs) {
  Projection::set_dequant_prefill_override(0);
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar}) {
    if (!kernels::may_use(isa)) continue;
    const int K = 256, N = 48;
    std::mt19937 g(5);
    std::vector<int32_t> perm(K);
    for (int k = 0; k < K; ++k) perm[k] = (k * 37 + 11) % K;
    const std::vector<uint8_t> wc = random_blocks(q::WType::q4_0c, K, N, g);
    std::vector<uint8_t> w8(size_t(N) * (K / 32) * sizeof(q::BlockQ8_0));
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& v : w8) v = uint8_t(byte(g));
    for (size_t at = 0; at < w8.size(); at += sizeof(q::BlockQ8_0)) {
      const uint16_t d = q::f32_to_half(0.02f);
      std::memcpy(w8.data() + at, &d, 2);
    }
    for (int which = 0; which < 2; ++which) {
      std::unique_ptr<Projection> a, b;
      if (which == 0) {
        ASSERT_TRUE(Projection::create_offset_blocks(q::WType::q4_0c, wc.data(), K, N, nullptr, isa, &a).ok());
        ASSERT_TRUE(Projection::create_offset_blocks(q::WType::q4_0c, wc.data(), K, N, nullptr, isa, &b).ok());
      } else {
        ASSERT_TRUE(Projection::create_typed(kernels::WeightType::q8_0, w8.data(), K, N, nullptr, isa, &a).ok());
        ASSERT_TRUE(Projection::create_typed(kernels::WeightType::q8_0, w8.data(), K, N, nullptr, isa, &b).ok());
      }
      ASSERT_TRUE(a->set_input_permutation(perm.data()).ok());
      for (int M : {1, 3, 40}) {
        const int64_t ldx = K + 3;
        std::vector<float> x(size_t(M) * ldx), xg(size_t(M) * K), ya(size_t(M) * N), yb(size_t(M) * N);
        std::uniform_real_distribution<float> u(-1, 1);
        for (float& v : x) v = u(g) + 0.2f;
        for (int r = 0; r < M; ++r)
          for (int k = 0; k < K; ++k) xg[size_t(r) * K + k] = x[r * ldx + perm[k]];
        std::vector<Line> sa(a->scratch_bytes(M) / 64 + 1), sb(b->scratch_bytes(M) / 64 + 1);
        for (int threads : {1, 2}) {
          ASSERT_TRUE(a->run(x.data(), ldx, ya.data(), N, M, threads, sa.data()).ok());
          ASSERT_TRUE(b->run(xg.data(), K, yb.data(), N, M, threads, sb.data()).ok());
          EXPECT_EQ(ya, yb) << kernels::isa_name(isa) << " " << which << " M " << M << " threads " << threads;
        }
        if (!a->can_slice(M)) continue;
        std::vector<Line> ta(a->slice_scratch_bytes(M) / 64 + 1), tb(b->slice_scratch_bytes(M) / 64 + 1);
        std::fill(ya.begin(), ya.end(), NAN);
        std::fill(yb.begin(), yb.end(), NAN);
        const int n1 = a->slice_rows() <= 16 ? 16 : a->slice_rows();
        a->run_slice(x.data(), ldx, ya.data(), N, M, 0, n1, ta.data());
        a->run_slice(x.data(), ldx, ya.data(), N, M, n1, N, ta.data());
        b->run_slice(xg.data(), K, yb.data(), N, M, 0, n1, tb.data());
        b->run_slice(xg.data(), K, yb.data(), N, M, n1, N, tb.data());
        EXPECT_EQ(ya, yb) << kernels::isa_name(isa) << " slices " << which << " M " << M;
      }
      std::vector<int32_t> bad = perm;
      bad[7] = bad[8];
      const Status s = b->set_input_permutation(bad.data());
      EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.message();
    }
  }
  Projection::set_dequant_prefill_override(-1);
}

TEST(ProjectionOffsets, BadArgumentsAreRefused) {
  std::vector<uint8_t> w(24 * 4);
  std::unique_ptr<Projection> p;
  EXPECT_FALSE(Projection::create_offset_blocks(q::WType::q8_0, w.data(), 32, 4, nullptr, Isa::scalar, &p).ok());
  const Status s = Projection::create_offset_blocks(q::WType::q5_1, w.data(), 48, 2, nullptr, Isa::scalar, &p);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_NE(s.message().find("Q5_1"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace headwise::graph
