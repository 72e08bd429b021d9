// Q5_K: super-blocks of 256 = 8 sub-blocks of 32, x = d·sc_j·q − dmin·m_j with 6-bit
// sc_j, m_j (packed as Q4_K's) and 5-bit q ∈ [0, 31]: the low 4 bits as Q4_K's nibbles,
// the 5th bit of element l of sub-block j in bit j of qh[l] (blocks.hpp). Reference
// quantization, dequantization and the scalar product against int8 inputs: Q4_K's
// (q45_k.hpp), with the packing and the level accessor here.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/linear_quant_impl.hpp"
#include "kernels/quant/q45_k.hpp"

namespace headwise::kernels::quant {

void quantize_q5_k(const float* x, void* out, int64_t K) {
  auto* o = static_cast<BlockQ5_K*>(out);
  for (int64_t b = 0; b < K / kQKK; ++b) {
    BlockQ5_K& B = o[b];
    uint8_t q[kQKK];
    quantize_k_scale_min(x + b * kQKK, 31, &B.d, &B.dmin, B.scales, q);
    std::memset(B.qh, 0, sizeof B.qh);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const int a = q[64 * c + l], h = q[64 * c + 32 + l];
        B.q[32 * c + l] = uint8_t((a & 0xF) | ((h & 0xF) << 4));
        B.qh[l] |= uint8_t(((a >> 4) << (2 * c)) | ((h >> 4) << (2 * c + 1)));
      }
  }
}

namespace {
// Level i (0..255) of a Q5_K block.
inline int q5_k_at(const BlockQ5_K& b, int i) {
  const int c = i / 64, r = i % 64, l = i % 32;
  const int low = r < 32 ? (b.q[32 * c + r] & 0xF) : (b.q[32 * c + r - 32] >> 4);
  return low | (((b.qh[l] >> (i / 32)) & 1) << 4);
}
}  // namespace

void dequantize_q5_k(const void* w, float* out, int64_t K) { dequantize_k_scale_min<BlockQ5_K, q5_k_at>(w, out, K); }

void gemv_q5_k__scalar(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                       int M, int64_t K, float* y, int64_t ldy) {
  gemv_rows<dot_k_scale_min<BlockQ5_K, q5_k_at>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q5_k__scalar =
    quant::QuantLinear<quant::WType::q5_k, WeightType::q5_k, quant::gemv_q5_k__scalar, false>::impl("q5_K");
}  // namespace headwise::kernels
