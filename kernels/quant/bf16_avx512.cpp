// BF16 products on avx512: AVX512-BF16 vdpbf16ps multiplies 32 bf16 pairs into 16 fp32
// sums per instruction; the tail is a masked load (zeros add nothing).
// How the rows are asked for ahead depends on the host (cpu_decode_nontemporal(), quant.hpp):
// - Zen 5 (AMD family 1Ah): one non-temporal request a line 8 KiB ahead. 2026-12-03,
//   `headwise bench llama-134m-bf16.gguf --threads 2 --prompt-len 512 --gen-len 128
//   --kv-type f16`, 4 alternating env-switched rounds: 217-259 tok/s against ahead()'s
//   135-199 (projections 407-470 against 498-820 ms over 128 steps) and far requests alone
//   204-218 — faster in every round; session 9 had chosen it there too (768 x 32000 rows
//   46-49 -> 51-52 GB/s).
// - Zen 4, which runs 512-bit operations as two halves, and every other vendor:
//   dot_x86.hpp's ahead(), 2 KiB into L1 and 16 KiB into L2. Zen 4 (its note has the
//   session-19 figures): 106-124 -> 115-141 tok/s against the non-temporal request, 6 of
//   7 rounds faster. Intel Xeon with AMX and 480 MiB of L3 (session 23, 2026-12-05, the
//   same command, 3 alternating env-switched rounds, read bandwidth 10.3-10.9 GB/s):
//   non-temporal 41.1-42.0 tok/s, ahead() 121-128, far requests alone 107-115, one L1
//   request 8 KiB ahead 103-105 — a non-temporal line is not kept in the L3, so the
//   256 MiB file came from DRAM every token (98% of the probe's bandwidth) where the L3
//   could hold much of it.
#include "kernels/quant/dot_x86.hpp"
#include "kernels/quant/linear_quant_impl.hpp"

namespace headwise::kernels::quant {
namespace {
inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh&>(v); }
template <bool kNonTemporal>
float dot_bf16(const uint8_t* w, const uint8_t* xa, int64_t K) {
  const auto* h = reinterpret_cast<const uint16_t*>(w);
  const auto* x = reinterpret_cast<const uint16_t*>(xa);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 64 <= K; k += 64) {
    if constexpr (kNonTemporal) {
      ahead_nta(h + k);  // dot_x86.hpp: 8 KiB ahead
      ahead_nta(h + k + 32);
    } else {
      ahead(h + k);
      ahead(h + k + 32);
    }
    acc0 = _mm512_dpbf16_ps(acc0, as_bh(_mm512_loadu_si512(h + k)), as_bh(_mm512_loadu_si512(x + k)));
    acc1 = _mm512_dpbf16_ps(acc1, as_bh(_mm512_loadu_si512(h + k + 32)), as_bh(_mm512_loadu_si512(x + k + 32)));
  }
  for (; k < K; k += 32) {
    const __mmask32 m = K - k >= 32 ? ~__mmask32(0) : __mmask32((1u << (K - k)) - 1);
    acc0 = _mm512_dpbf16_ps(acc0, as_bh(_mm512_maskz_loadu_epi16(m, h + k)), as_bh(_mm512_maskz_loadu_epi16(m, x + k)));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
}  // namespace

void gemv_bf16__avx512(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  if (cpu_decode_nontemporal(Isa::avx512))
    gemv_rows<dot_bf16<true>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
  else
    gemv_rows<dot_bf16<false>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_bf16__avx512 =
    quant::QuantLinear<quant::WType::bf16, WeightType::bf16, quant::gemv_bf16__avx512, true, quant::prepare_x86>::impl("bf16");
}  // namespace headwise::kernels
