// AVX-512 instantiation of the attention bodies (compiled with -mavx512f/bw/dq/vl).
// Prefill tile: 64 queries (4 zmm) × 64 keys; register blocks of 6 keys × 4 query
// vectors for Q·Kᵀ and 6 features × 4 query vectors for P·V (24 accumulators of 32).
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/attention/attn_decode_impl.hpp"
#include "kernels/attention/attn_fwd_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::avx512bw>;
static_assert(S::W == 16);
// The tiles of attention.inc for this ISA (a whole number of vectors of queries).
constexpr AttnTiles kTiles = attn_tiles(Isa::avx512);
static_assert(kTiles.q_tile % S::W == 0 && kTiles.kv_tile > 0, "attention.inc tiles for avx512");
}  // namespace

void attn_fwd_f32_q64k64__avx512(const AttnProblem& p, int b, int hq, int q0, float* s, const AttnPackedKv*) {
  AttnFwd<S, KvF32, kTiles.q_tile / S::W, kTiles.kv_tile, 6, 6>::run(p, b, hq, q0, s);
}

void attn_decode_f32_k64__avx512(const AttnProblem& p, int b, int k0, int k1, float* part,
                                 float* s, AttnAhead ahead) {
  attn_decode<S, KvF32, kTiles.kv_tile>(p, b, k0, k1, part, s, ahead);
}

}  // namespace headwise::kernels
