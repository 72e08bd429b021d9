// AVX-512 + AMX instantiation of the split-bf16 prefill body (attn_fwd_amx_impl.hpp) for
// an f16 KV cache; its decode is the avx512 line's (attention.inc).
#include "kernels/attention/attn_fwd_amx_impl.hpp"

namespace headwise::kernels {
namespace {
// The tiles of attention.inc for this line.
constexpr AttnTiles kTiles = attn_tiles(Isa::avx512, KvType::f16, AttnUnit::amx);
}  // namespace

void attn_fwd_f16_q128k64__amx(const AttnProblem& p, int b, int hq, int q0, float* s) {
  AttnFwdAmx<KvF16, kTiles.q_tile, kTiles.kv_tile>::run(p, b, hq, q0, s);
}

}  // namespace headwise::kernels
