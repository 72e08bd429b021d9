// AVX-512 + AMX instantiations of the split-bf16 prefill body (attn_fwd_amx_impl.hpp),
// one per 16-bit KV cache type (an fp32 cache has no amx line: attention.inc says why),
// with the packing of K and V each line's prefill reads (AttnPackedKv); their decode is
// the avx512 lines'.
#include "kernels/attention/attn_fwd_amx_impl.hpp"

namespace headwise::kernels {
namespace {
// The tiles of attention.inc for these lines.
constexpr AttnTiles kF16 = attn_tiles(Isa::avx512, KvType::f16, AttnUnit::amx);
constexpr AttnTiles kBf16 = attn_tiles(Isa::avx512, KvType::bf16, AttnUnit::amx);
using F16 = AttnFwdAmx<KvF16, kF16.q_tile, kF16.kv_tile>;
using Bf16 = AttnFwdAmx<KvBf16, kBf16.q_tile, kBf16.kv_tile>;
}  // namespace

void attn_fwd_f16_q128k64__amx(const AttnProblem& p, int b, int hq, int q0, float* s, const AttnPackedKv* packed) {
  F16::run(p, b, hq, q0, s, packed);
}
void attn_fwd_f16_q128k64__amx_pack(const AttnProblem& p, int b, int hk, int k0, uint16_t* tile) {
  F16::pack(p, b, hk, k0, tile);
}

void attn_fwd_bf16_q128k64__amx(const AttnProblem& p, int b, int hq, int q0, float* s, const AttnPackedKv* packed) {
  Bf16::run(p, b, hq, q0, s, packed);
}
void attn_fwd_bf16_q128k64__amx_pack(const AttnProblem& p, int b, int hk, int k0, uint16_t* tile) {
  Bf16::pack(p, b, hk, k0, tile);
}

}  // namespace headwise::kernels
