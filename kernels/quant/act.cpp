// Input rows prepared for the weight types' products (quant.hpp): fp32 as is, bf16
// rounded to nearest even, or int8 blocks of 32 with one fp32 scale each.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {

size_t act_row_bytes(ActKind a, int64_t K) {
  switch (a) {
    case ActKind::f32: return size_t(K) * 4;
    case ActKind::bf16: return size_t(K) * 2;
    case ActKind::q8a: return size_t(K / kQK) * sizeof(BlockQ8A);
  }
  return 0;
}

void prepare_activations(ActKind a, const float* x, void* out, int64_t K) {
  switch (a) {
    case ActKind::f32:
      std::memcpy(out, x, size_t(K) * 4);
      return;
    case ActKind::bf16: {
      auto* o = static_cast<uint16_t*>(out);
      for (int64_t k = 0; k < K; ++k) o[k] = f32_to_bf16(x[k]);
      return;
    }
    case ActKind::q8a: {
      auto* o = static_cast<BlockQ8A*>(out);
      for (int64_t b = 0; b < K / kQK; ++b) {
        const float* xb = x + b * kQK;
        float amax = 0;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(xb[j]));
        // d = amax / 127 so the largest value maps to ±127; q = round(x / d).
        const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        o[b].d = d;
        int s0 = 0, s1 = 0;
        for (int j = 0; j < kQK; ++j) {
          const float v = round_even(xb[j] * id);
          const int q = int(clampf(v, -127.0f, 127.0f));
          o[b].q[j] = int8_t(q);
          (j < kQK / 2 ? s0 : s1) += q;
        }
        o[b].sum[0] = int16_t(s0);
        o[b].sum[1] = int16_t(s1);
      }
      return;
    }
  }
}

void activation_values(ActKind a, const void* xa, double* out, int64_t K) {
  switch (a) {
    case ActKind::f32:
      for (int64_t k = 0; k < K; ++k) out[k] = static_cast<const float*>(xa)[k];
      return;
    case ActKind::bf16:
      for (int64_t k = 0; k < K; ++k) out[k] = bf16_to_f32(static_cast<const uint16_t*>(xa)[k]);
      return;
    case ActKind::q8a: {
      const auto* b = static_cast<const BlockQ8A*>(xa);
      for (int64_t k = 0; k < K; ++k) out[k] = double(b[k / kQK].d) * b[k / kQK].q[k % kQK];
      return;
    }
  }
}

}  // namespace headwise::kernels::quant
