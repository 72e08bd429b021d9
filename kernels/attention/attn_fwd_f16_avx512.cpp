// AVX-512 instantiation of the attention bodies for an f16 KV cache (vcvtph2ps widening).
// Same tiles as attn_fwd_f32_avx512.cpp: the micro-kernels run on fp32 tiles either way.
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::avx512bw>;
static_assert(S::W == 16);
}  // namespace

void attn_fwd_f16_q64k64__avx512(const AttnProblem& p, int b, int hq, int q0, float* s) {
  AttnFwd<S, KvF16, 4, 64, 6, 6>::run(p, b, hq, q0, s);
}

void attn_decode_f16_k64__avx512(const AttnProblem& p, int b, int k0, int k1, float* part,
                                 float* s) {
  AttnDecode<S, KvF16, 64>::run(p, b, k0, k1, part, s);
}

}  // namespace headwise::kernels
