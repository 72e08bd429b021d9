// AVX2+FMA+F16C instantiation of the attention bodies for a bf16 KV cache (shift widening).
// The micro-kernels run on fp32 tiles either way, so the tiles are the fp32 ones.
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::fma3<xsimd::avx2>>;
static_assert(S::W == 8);
// The tiles of attention.inc for this ISA and element type.
constexpr AttnTiles kTiles = attn_tiles(Isa::avx2, KvType::bf16);
static_assert(kTiles.q_tile % S::W == 0 && kTiles.kv_tile > 0, "attention.inc tiles for avx2 bf16");
}  // namespace

void attn_fwd_bf16_q48k64__avx2(const AttnProblem& p, int b, int hq, int q0, float* s, const AttnPackedKv*) {
  AttnFwd<S, KvBf16, kTiles.q_tile / S::W, kTiles.kv_tile, 4, 4, 3>::run(p, b, hq, q0, s);
}

void attn_decode_bf16_k64__avx2(const AttnProblem& p, int b, int k0, int k1, float* part,
                               float* s, AttnAhead ahead) {
  attn_decode<S, KvBf16, kTiles.kv_tile>(p, b, k0, k1, part, s, ahead);
}

}  // namespace headwise::kernels
