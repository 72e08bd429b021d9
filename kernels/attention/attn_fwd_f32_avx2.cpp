// AVX2+FMA instantiation of the attention bodies (compiled with -mavx2 -mfma).
// Prefill tile: 64 queries (8 ymm) × 64 keys; register blocks of 6 keys × 2 query
// vectors and 6 features × 2 query vectors (12 accumulators of 16 registers).
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::fma3<xsimd::avx2>>;
static_assert(S::W == 8);
}  // namespace

void attn_fwd_f32_q64k64__avx2(const AttnProblem& p, int b, int hq, int q0, float* s) {
  AttnFwd<S, 8, 64, 6, 6, 2>::run(p, b, hq, q0, s);
}

void attn_decode_f32_k64__avx2(const AttnProblem& p, int b, int k0, int k1, float* part,
                               float* s) {
  AttnDecode<S, 64>::run(p, b, k0, k1, part, s);
}

}  // namespace headwise::kernels
