// The public attention entry points: validate, pick the kernel of the active ISA from
// the list (kernels/registry.hpp; per call, as there is no plan here), give it
// workspace, run. Kernels themselves never allocate or report errors.
#include <climits>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

#include "headwise/attention.hpp"
#include "kernels/attention/attention.hpp"
#include "runtime/workspace.hpp"

namespace headwise {
static_assert(kKvTileRows == kernels::kKvTileRows, "the public tile is the kernels' tile");
namespace {

Status validate(const AttentionParams& a, const AttnInput& q, const AttnKvInput& k,
                const AttnKvInput& v, const AttnOutput& o) {
  if (!q.data) return invalid_argument("attention: q is a null pointer");
  if (!k.data) return invalid_argument("attention: k is a null pointer");
  if (!v.data) return invalid_argument("attention: v is a null pointer");
  if (!o.data) return invalid_argument("attention: out is a null pointer");
  if (a.batch < 1) return invalid_argument("attention: batch must be >= 1, got " + std::to_string(a.batch));
  if (a.q_len < 1) return invalid_argument("attention: q_len must be >= 1, got " + std::to_string(a.q_len));
  if (a.kv_len < 0) return invalid_argument("attention: kv_len must be >= 0, got " + std::to_string(a.kv_len));
  if (a.q_heads < 1 || a.kv_heads < 1)
    return invalid_argument("attention: q_heads and kv_heads must be >= 1, got " +
                            std::to_string(a.q_heads) + " and " + std::to_string(a.kv_heads));
  if (a.q_heads % a.kv_heads != 0)
    return invalid_argument("attention: q_heads (" + std::to_string(a.q_heads) +
                            ") is not a multiple of kv_heads (" + std::to_string(a.kv_heads) + ")");
  if (a.head_dim < 1 || a.head_dim > kernels::kMaxHeadDim)
    return invalid_argument("attention: head_dim must be in 1.." + std::to_string(kernels::kMaxHeadDim) +
                            ", got " + std::to_string(a.head_dim));
  if (a.causal && a.q_len > a.kv_len)
    return invalid_argument("attention: causal attention needs q_len <= kv_len, got q_len " +
                            std::to_string(a.q_len) + " > kv_len " + std::to_string(a.kv_len));
  if (!(a.scale >= 0.0f) || std::isinf(a.scale))
    return invalid_argument("attention: scale must be finite and >= 0 (0 = 1/sqrt(head_dim))");
  if (a.threads < 0 || a.threads > kMaxThreads)
    return invalid_argument("attention: threads " + std::to_string(a.threads) + " is outside 0.." +
                            std::to_string(kMaxThreads));
  // The kernels count tasks and rows in int (batch × q_heads × query tiles, q_len ×
  // q_heads): bound the products in 64 bits so nothing wraps into "no work" and OK.
  const int64_t rows = int64_t(a.batch) * a.q_heads * a.q_len;
  const int64_t keys = int64_t(a.batch) * a.kv_heads * a.kv_len;
  if (rows > INT32_MAX || keys > INT32_MAX)
    return invalid_argument("attention: batch × heads × positions is " + std::to_string(rows > keys ? rows : keys) +
                            " (batch " + std::to_string(a.batch) + ", q_heads " + std::to_string(a.q_heads) +
                            ", q_len " + std::to_string(a.q_len) + ", kv_heads " + std::to_string(a.kv_heads) +
                            ", kv_len " + std::to_string(a.kv_len) + "), above 2^31 - 1, a limit of this build");
  if (a.kv_type != KvType::f32 && a.kv_type != KvType::f16 && a.kv_type != KvType::bf16)
    return invalid_argument("attention: kv_type " + std::to_string(int(a.kv_type)) +
                            " is not f32 (0), f16 (1) or bf16 (2)");
  if (k.tile_stride < 0 || v.tile_stride < 0)
    return invalid_argument("attention: tile_stride must be >= 0 (0 = plain), got " +
                            std::to_string(k.tile_stride < 0 ? k.tile_stride : v.tile_stride) + " for " +
                            (k.tile_stride < 0 ? "k" : "v"));
  if ((k.tile_stride > 0) != (v.tile_stride > 0))
    return invalid_argument(std::string("attention: k and v must both be tiled or both plain; ") +
                            (k.tile_stride > 0 ? "k" : "v") + " has a tile_stride and " +
                            (k.tile_stride > 0 ? "v" : "k") + " has none");
  if (k.tile_stride > 0 && a.kv_type == KvType::f32)
    return invalid_argument("attention: a tiled k and v (tile_stride > 0) need a 16-bit kv_type "
                            "(f16 or bf16); an f32 K/V is read plain");
  if (a.kv_valid)
    for (int b = 0; b < a.batch; ++b)
      if (a.kv_valid[b] < 0 || a.kv_valid[b] > a.kv_len)
        return invalid_argument("attention: kv_valid[" + std::to_string(b) + "] = " +
                                std::to_string(a.kv_valid[b]) + " is outside 0..kv_len (" +
                                std::to_string(a.kv_len) + ")");
  if (!kernels::isa_env_error().empty()) return unsupported(kernels::isa_env_error());
  if (!kernels::amx_env_error().empty()) return unsupported(kernels::amx_env_error());
  return Status::Ok();
}

kernels::AttnProblem to_problem(const AttentionParams& a, const AttnInput& q,
                                const AttnKvInput& k, const AttnKvInput& v, const AttnOutput& o) {
  kernels::AttnProblem p;
  p.q = {q.data, q.batch_stride, q.pos_stride, q.head_stride};
  p.k = {k.data, k.batch_stride, k.pos_stride, k.head_stride, k.tile_stride};
  p.v = {v.data, v.batch_stride, v.pos_stride, v.head_stride, v.tile_stride};
  p.o = {o.data, o.batch_stride, o.pos_stride, o.head_stride};
  p.batch = a.batch;
  p.q_len = a.q_len;
  p.kv_len = a.kv_len;
  p.q_heads = a.q_heads;
  p.kv_heads = a.kv_heads;
  p.head_dim = a.head_dim;
  p.causal = a.causal;
  p.scale = a.scale > 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  p.kv_valid = a.kv_valid;
  p.kv_type = a.kv_type;
  return p;
}

}  // namespace

Status attention(const AttentionParams& params, AttnInput q, AttnKvInput k, AttnKvInput v,
                 AttnOutput out) {
  HW_RETURN_IF_ERROR(validate(params, q, k, v, out));
  const kernels::AttnProblem p = to_problem(params, q, k, v, out);
  const kernels::AttnKernel& kern = kernels::attn_kernel(kernels::active_isa(), p.kv_type);
  const kernels::AttnPlan plan = kernels::plan_attention(kern, p, params.threads);
  float* ws = thread_workspace(plan.workspace_floats());
  if (!ws) return out_of_memory("attention: out of memory for a workspace of " +
                                std::to_string(plan.workspace_floats()) + " floats");
  kernels::run_attention(kern, p, plan, ws);
  return Status::Ok();
}

Status attention_reference(const AttentionParams& params, AttnInput q, AttnKvInput k,
                           AttnKvInput v, AttnOutput out) {
  HW_RETURN_IF_ERROR(validate(params, q, k, v, out));
  kernels::attention_reference(to_problem(params, q, k, v, out));
  return Status::Ok();
}

const char* isa_name() { return kernels::isa_name(kernels::active_isa()); }

}  // namespace headwise
