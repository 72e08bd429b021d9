// The linear-registry lines of the low-bit weight types (called from linear_test.cpp for
// every such line): weights quantized by the catalogue's reference quantizer, rows of
// [N][K] blocks as GGUF stores them; y = x·Wᵀ + b against a float64 reference computed
// from the DEQUANTIZED weights and the inputs as the kernel's products see them (bf16- or
// int8-quantized, activation_values()), so only fp32 summation order differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/matmul/linear.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels {

// tests/kernels/linear_test.cpp: run() in two parts gives the bits run() gave.
void expect_two_part_run_matches(const LinearKernel& lk, const PackedWeights& w, const float* bias, const float* x,
                                 int64_t ldx, const float* want, int64_t ldy, int rows, int threads);

void check_quant_linear_kernel(const LinearKernel& lk) {
  quant::WType qt;
  ASSERT_TRUE(quant::parse_wtype(weight_type_name(lk.type), &qt)) << weight_type_name(lk.type);
  const quant::TypeInfo& ti = *quant::type_info(qt);
  ASSERT_EQ(ti.block, weight_block_elems(lk.type)) << lk.symbol;
  ASSERT_EQ(ti.block_bytes, weight_block_bytes(lk.type)) << lk.symbol;
  const int b = ti.block;
  // N = 17, 130, 131: every width of the last weight-row group of the 4-row tiles; K = 600
  // or 9 blocks: kernels that block K (the avx2 BF16/F16 panels, 256) end in a part-block
  for (auto [K, N] : {std::pair{b == 1 ? 16 : b, 17}, {b == 1 ? 100 : 3 * b, 130}, {b == 1 ? 64 : 2 * b, 131},
                      {b == 1 ? 600 : 9 * b, 33}}) {
    std::mt19937 g(K * 31 + N);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> w(size_t(K) * N), bias(N);
    for (float& x : w) x = u(g);
    for (float& x : bias) x = u(g);
    const size_t rb = quant::row_bytes(ti, K);
    std::vector<uint8_t> q(rb * N);
    std::vector<double> wd(size_t(K) * N);
    std::vector<float> row(K);
    for (int n = 0; n < N; ++n) {
      ti.quantize(w.data() + size_t(n) * K, q.data() + n * rb, K);
      ti.dequantize(q.data() + n * rb, row.data(), K);
      for (int k = 0; k < K; ++k) wd[size_t(n) * K + k] = row[k];
    }
    PackedWeights pw;
    pw.type = lk.type;
    pw.data = q.data();
    pw.K = pw.Kp = K;
    pw.N = N;
    pw.KB = b;
    pw.NB = 1;
    pw.row_bytes = int64_t(rb);
    ASSERT_TRUE(lk.impl->supports(pw) || (lk.isa == Isa::avx512 && !quant::cpu_has_avx512_vnni_bf16()))
        << lk.symbol << " declines its own type's rows";
    if (!lk.impl->supports(pw)) GTEST_SKIP() << lk.symbol << ": this CPU lacks AVX512-VNNI/BF16";
    // A kernel with its own layout runs on its repacked copy, written as the plan writes
    // it: group by group, here in two calls (the first group, then the rest).
    std::vector<uint8_t> repacked;
    if (lk.impl->repack) {
      const int64_t G = lk.impl->repack_rows;
      ASSERT_GT(G, 0) << lk.symbol;
      repacked.assign(lk.impl->repacked_bytes(pw) + 64, 0xA5);  // filler a kernel must not read as data
      void* dst = repacked.data() + (64 - reinterpret_cast<uintptr_t>(repacked.data()) % 64) % 64;
      const int64_t split = std::min<int64_t>(G, N);
      lk.impl->repack(pw, 0, split, dst);
      if (split < N) lk.impl->repack(pw, split, N, dst);
      pw.data = dst;
      pw.repacked = true;
    }
    // Q8_0 on avx2 takes its fp32 prefill only where the CPU's integer multiply is slow
    // (quant::cpu_int8_multiply_slow): both paths, whatever this CPU is.
    // Decode's weights are asked for ahead non-temporally on AMD but Zen 4 and into the
    // caches elsewhere (quant::cpu_decode_nontemporal: BF16 and F16 rows on avx2; on
    // avx512 BF16 rows and the K-quant 16-row panels): both, too, on every avx512 kernel.
    const bool both_prefills = lk.type == WeightType::q8_0 && lk.isa == Isa::avx2;
    const bool both_prefetches =
        lk.isa == Isa::avx512 || ((lk.type == WeightType::bf16 || lk.type == WeightType::f16) && lk.isa == Isa::avx2);
    struct Restore {
      ~Restore() {
        quant::set_int8_multiply_slow_override(-1);
        quant::set_decode_nontemporal_override(-1);
      }
    } restore;
    for (int slow = 0; slow <= (both_prefills || both_prefetches ? 1 : 0); ++slow) {
      if (both_prefills) quant::set_int8_multiply_slow_override(slow);
      if (both_prefetches) quant::set_decode_nontemporal_override(slow);
      // 101: more than one chunk of the prefill loops (64 or 96 rows)
      for (int rows : {1, 2, 3, 4, 5, 8, 17, 70, 101})
        for (int threads : {1, 2}) {
          const int64_t ldx = K + 3, ldy = N + 5;  // strided rows
          std::vector<float> x(size_t(rows) * ldx), y(size_t(rows) * ldy, NAN);
          for (float& v : x) v = u(g);
          std::vector<uint8_t> scratch(lk.impl->scratch_bytes(pw, rows) + 64);
          void* sp = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
          lk.impl->run(pw, bias.data(), x.data(), ldx, y.data(), ldy, rows, threads, sp);
          expect_two_part_run_matches(lk, pw, bias.data(), x.data(), ldx, y.data(), ldy, rows, threads);
          double worst = 0;
          std::vector<uint8_t> xa(quant::act_row_bytes(ti.act, K));
          std::vector<double> xd(K);
          for (int r = 0; r < rows; ++r) {
            quant::prepare_activations(ti.act, x.data() + r * ldx, xa.data(), K);
            quant::activation_values(ti.act, xa.data(), xd.data(), K);
            for (int n = 0; n < N; ++n) {
              double ref = bias[n], mag = std::fabs(bias[n]);
              for (int k0 = 0; k0 < K; k0 += 32) {
                double max_w = 0;
                for (int k = k0; k < std::min(K, k0 + 32); ++k) max_w = std::max(max_w, std::fabs(wd[size_t(n) * K + k]));
                for (int k = k0; k < std::min(K, k0 + 32); ++k) {
                  ref += wd[size_t(n) * K + k] * xd[k];
                  mag += 2 * max_w * std::fabs(xd[k]);
                }
              }
              // fp32 sums only (as in quant_test.cpp): 4·2⁻²⁴ of the partial sums' magnitude
              const double err = std::fabs(y[r * ldy + n] - ref) / (4 * std::ldexp(mag, -24));
              worst = std::max(worst, std::isnan(y[r * ldy + n]) ? INFINITY : err);
            }
            for (int64_t n = N; n < ldy; ++n) ASSERT_TRUE(std::isnan(y[r * ldy + n])) << "wrote past N";
          }
          ASSERT_LE(worst, 1.0) << lk.symbol << " K " << K << " N " << N << " rows " << rows << " threads " << threads
                                << (both_prefills ? (slow ? " (fp32 prefill)" : " (int8 prefill)") : "")
                                << (both_prefetches ? (slow ? " (rows ahead into L1 + L2)" : " (non-temporal rows)") : "");
        }
    }
  }
}

}  // namespace headwise::kernels
