// Portable instantiation of the attention bodies (vector width 1, no AVX): the path
// HEADWISE_ISA=scalar forces and the last one the dispatch falls back to.
#include "kernels/simd/simd_scalar.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {

void attn_fwd_f32_q4k64__scalar(const AttnProblem& p, int b, int hq, int q0, float* s) {
  AttnFwd<simd::Scalar, KvF32, 4, 64, 4, 4>::run(p, b, hq, q0, s);
}

void attn_decode_f32_k64__scalar(const AttnProblem& p, int b, int k0, int k1, float* part,
                                 float* s) {
  AttnDecode<simd::Scalar, KvF32, 64>::run(p, b, k0, k1, part, s);
}

}  // namespace headwise::kernels
