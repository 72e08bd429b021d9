// AVX2+FMA instantiation of the attention bodies (compiled with -mavx2 -mfma).
// Prefill tile: 48 queries (6 ymm) × 64 keys; register blocks of 4 keys × 3 query
// vectors and 4 features × 3 query vectors (12 accumulators of 16 registers): on
// S2 (head_dim 128) 72% of the AVX2 peak against 67% for 64-query tiles of 6 × 2 blocks.
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::fma3<xsimd::avx2>>;
static_assert(S::W == 8);
// The tiles of attention.inc for this ISA (a whole number of vectors of queries).
constexpr AttnTiles kTiles = attn_tiles(Isa::avx2);
static_assert(kTiles.q_tile % S::W == 0 && kTiles.kv_tile > 0, "attention.inc tiles for avx2");
}  // namespace

void attn_fwd_f32_q48k64__avx2(const AttnProblem& p, int b, int hq, int q0, float* s, const AttnPackedKv*) {
  AttnFwd<S, KvF32, kTiles.q_tile / S::W, kTiles.kv_tile, 4, 4, 3>::run(p, b, hq, q0, s);
}

void attn_decode_f32_k64__avx2(const AttnProblem& p, int b, int k0, int k1, float* part,
                               float* s, AttnAhead ahead) {
  attn_decode<S, KvF32, kTiles.kv_tile>(p, b, k0, k1, part, s, ahead);
}

}  // namespace headwise::kernels
