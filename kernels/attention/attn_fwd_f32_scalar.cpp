// Portable instantiation of the attention bodies (vector width 1, no AVX): the path
// HEADWISE_ISA=scalar forces and the last one the dispatch falls back to.
#include "kernels/simd/simd_scalar.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {
namespace {
// The tiles of attention.inc for this ISA (a whole number of vectors of queries).
constexpr AttnTiles kTiles = attn_tiles(Isa::scalar);
static_assert(kTiles.q_tile % simd::Scalar::W == 0 && kTiles.kv_tile > 0, "attention.inc tiles for scalar");
}  // namespace

void attn_fwd_f32_q4k64__scalar(const AttnProblem& p, int b, int hq, int q0, float* s, const AttnPackedKv*) {
  AttnFwd<simd::Scalar, KvF32, kTiles.q_tile / simd::Scalar::W, kTiles.kv_tile, 4, 4>::run(p, b, hq, q0, s);
}

void attn_decode_f32_k64__scalar(const AttnProblem& p, int b, int k0, int k1, float* part,
                                 float* s, AttnAhead ahead) {
  attn_decode<simd::Scalar, KvF32, kTiles.kv_tile>(p, b, k0, k1, part, s, ahead);
}

}  // namespace headwise::kernels
