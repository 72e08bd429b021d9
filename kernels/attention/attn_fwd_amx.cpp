// AVX-512 + AMX instantiations of the split-bf16 prefill body (attn_fwd_amx_impl.hpp),
// one per 16-bit KV cache type (an fp32 cache has no amx line: attention.inc says why);
// their decode is the avx512 lines'.
#include "kernels/attention/attn_fwd_amx_impl.hpp"

namespace headwise::kernels {
namespace {
// The tiles of attention.inc for these lines.
constexpr AttnTiles kF16 = attn_tiles(Isa::avx512, KvType::f16, AttnUnit::amx);
constexpr AttnTiles kBf16 = attn_tiles(Isa::avx512, KvType::bf16, AttnUnit::amx);
}  // namespace

void attn_fwd_f16_q128k64__amx(const AttnProblem& p, int b, int hq, int q0, float* s) {
  AttnFwdAmx<KvF16, kF16.q_tile, kF16.kv_tile>::run(p, b, hq, q0, s);
}

void attn_fwd_bf16_q128k64__amx(const AttnProblem& p, int b, int hq, int q0, float* s) {
  AttnFwdAmx<KvBf16, kBf16.q_tile, kBf16.kv_tile>::run(p, b, hq, q0, s);
}

}  // namespace headwise::kernels
