// Q4_K: super-blocks of 256 = 8 sub-blocks of 32, x = d·sc_j·q − dmin·m_j with 6-bit
// sc_j, m_j and q ∈ [0, 15]. Reference quantization (scale search per sub-block, the
// 6-bit scales, the levels against the stored scales; packed here into nibbles),
// dequantization, and the scalar product against int8 inputs: all but the packing and
// the level accessor shared with Q5_K (q45_k.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"
#include "kernels/quant/q45_k.hpp"

namespace headwise::kernels::quant {

void quantize_q4_k(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockQ4_K*>(out);
  for (int64_t b = 0; b < K / kQKK; ++b) {
    BlockQ4_K& B = o[b];
    uint8_t q[kQKK];
    quantize_k_scale_min(x + b * kQKK, 15, &B.d, &B.dmin, B.scales, q);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) B.q[32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

namespace {
// Nibble i (0..255) of a Q4_K block.
inline int q4_k_at(const BlockQ4_K& b, int i) {
  const int c = i / 64, r = i % 64;
  return r < 32 ? (b.q[32 * c + r] & 0xF) : (b.q[32 * c + r - 32] >> 4);
}
}  // namespace

void dequantize_q4_k(const void* w, float* out, int64_t K) { dequantize_k_scale_min<BlockQ4_K, q4_k_at>(w, out, K); }

void gemv_q4_k__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_k_scale_min<BlockQ4_K, q4_k_at>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q4_k__scalar =
    quant::QuantLinear<quant::WType::q4_k, WeightType::q4_k, quant::gemv_q4_k__scalar, false>::impl("q4_K");
}  // namespace headwise::kernels
