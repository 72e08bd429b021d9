// Portable instantiation of the attention bodies for a f16 K/V cache (software
// widening, half.hpp): what HEADWISE_ISA=scalar runs.
#include "kernels/simd/simd_scalar.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {
namespace {
// The tiles of attention.inc for this ISA and element type.
constexpr AttnTiles kTiles = attn_tiles(Isa::scalar, KvType::f16);
static_assert(kTiles.q_tile % simd::Scalar::W == 0 && kTiles.kv_tile > 0, "attention.inc tiles for scalar f16");
}  // namespace

void attn_fwd_f16_q4k64__scalar(const AttnProblem& p, int b, int hq, int q0, float* s, const AttnPackedKv*) {
  AttnFwd<simd::Scalar, KvF16, kTiles.q_tile / simd::Scalar::W, kTiles.kv_tile, 4, 4>::run(p, b, hq, q0, s);
}

void attn_decode_f16_k64__scalar(const AttnProblem& p, int b, int k0, int k1, float* part,
                                 float* s, AttnAhead ahead) {
  attn_decode<simd::Scalar, KvF16, kTiles.kv_tile>(p, b, k0, k1, part, s, ahead);
}

}  // namespace headwise::kernels
