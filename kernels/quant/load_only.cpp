// The GGUF types headwise reads but does not compute on (quant.hpp): Q5_0, Q4_1, Q5_1
// and IQ4_NL, which llama-quantize writes in place of Q4_K, Q5_K and IQ4_XS where a row
// is not whole 256-blocks. Each is re-encoded at load as Q8_0 (plus, for Q4_1 and Q5_1,
// one offset a block) and runs on the Q8_0 kernels; the dequantizers serve the conversions (token
// embedding rows, `headwise convert`) and the tests.
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {

void dequantize_q8_0(const void* w, float* out, int64_t K);
void dequantize_q4_0(const void* w, float* out, int64_t K);

namespace {

uint32_t load_qh(const uint8_t* qh) {
  return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

// The 32 quants of a Q4_1 block (q ∈ [0, 15]) or a Q5_1 block (q ∈ [0, 31]): element
// j < 16 the low nibble of byte j, j + 16 its high nibble, bit j of qh the 5th bit.
void quants(const BlockQ4_1& b, int* q) {
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = b.q[j] & 0x0F;
    q[j + kQK / 2] = b.q[j] >> 4;
  }
}
void quants(const BlockQ5_1& b, int* q) {
  const uint32_t qh = load_qh(b.qh);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = (b.q[j] & 0x0F) | int((qh >> j) & 1) << 4;
    q[j + kQK / 2] = (b.q[j] >> 4) | int((qh >> (j + kQK / 2)) & 1) << 4;
  }
}

template <class B>
void dequantize_offset(const void* w, float* out, int64_t K) {
  const auto* in = static_cast<const B*>(w);
  for (int64_t b = 0; b < K / kQK; ++b) {
    int q[kQK];
    quants(in[b], q);
    const float d = half_to_f32(in[b].d), m = half_to_f32(in[b].m);
    for (int j = 0; j < kQK; ++j) out[b * kQK + j] = float(q[j]) * d + m;
  }
}

template <class B, int O>
void offset_to_q8_0(const void* src, void* q8_0, float* offsets, int64_t blocks) {
  const auto* in = static_cast<const B*>(src);
  auto* out = static_cast<BlockQ8_0*>(q8_0);
  for (int64_t b = 0; b < blocks; ++b) {
    int q[kQK];
    quants(in[b], q);
    out[b].d = in[b].d;
    for (int j = 0; j < kQK; ++j) out[b].q[j] = int8_t(q[j] - O);
    // O·d is exact (O a power of two); the sum is rounded once, if at all.
    offsets[b] = half_to_f32(in[b].m) + float(O) * half_to_f32(in[b].d);
  }
}

}  // namespace

void dequantize_q5_0(const void* w, float* out, int64_t K) {
  const auto* in = static_cast<const BlockQ5_0*>(w);
  for (int64_t b = 0; b < K / kQK; ++b) {
    BlockQ8_0 q;
    q5_0_to_q8_0(in + b, &q, 1);
    dequantize_q8_0(&q, out + b * kQK, kQK);
  }
}

void dequantize_q4_1(const void* w, float* out, int64_t K) { dequantize_offset<BlockQ4_1>(w, out, K); }
void dequantize_q5_1(const void* w, float* out, int64_t K) { dequantize_offset<BlockQ5_1>(w, out, K); }
void q4_1_to_q8_0(const void* q4_1, void* q8_0, float* offsets, int64_t blocks) {
  offset_to_q8_0<BlockQ4_1, 8>(q4_1, q8_0, offsets, blocks);
}
void q5_1_to_q8_0(const void* q5_1, void* q8_0, float* offsets, int64_t blocks) {
  offset_to_q8_0<BlockQ5_1, 16>(q5_1, q8_0, offsets, blocks);
}

void iq4_nl_to_q8_0(const void* iq4_nl, void* q8_0, int64_t blocks) {
  const auto* in = static_cast<const BlockIQ4_NL*>(iq4_nl);
  auto* out = static_cast<BlockQ8_0*>(q8_0);
  for (int64_t b = 0; b < blocks; ++b) {
    out[b].d = in[b].d;
    for (int j = 0; j < kQK / 2; ++j) {
      out[b].q[j] = kIq4Values[in[b].q[j] & 0x0F];
      out[b].q[j + kQK / 2] = kIq4Values[in[b].q[j] >> 4];
    }
  }
}
void dequantize_iq4_nl(const void* w, float* out, int64_t K) {
  const auto* in = static_cast<const BlockIQ4_NL*>(w);
  for (int64_t b = 0; b < K / kQK; ++b) {
    BlockQ8_0 q;
    iq4_nl_to_q8_0(in + b, &q, 1);
    dequantize_q8_0(&q, out + b * kQK, kQK);  // d·q: ggml's d·kvalues[q], one rounding
  }
}

namespace {
template <class C, class B>
void split_offsets(const void* src, void* base, float* offsets, int64_t blocks) {
  const auto* in = static_cast<const C*>(src);
  auto* out = static_cast<B*>(base);
  for (int64_t b = 0; b < blocks; ++b) {
    out[b] = in[b].b;
    std::memcpy(&offsets[b], in[b].c, 4);
  }
}
template <class C, class B>
void dequantize_offsets(const void* w, float* out, int64_t K, void (*base)(const void*, float*, int64_t)) {
  const auto* in = static_cast<const C*>(w);
  for (int64_t b = 0; b < K / kQK; ++b) {
    float c;
    std::memcpy(&c, in[b].c, 4);
    base(&in[b].b, out + b * kQK, kQK);
    // d·(q − o) and c = d·(o − z) are both exact multiples of d's last place; their sum
    // d·(q − z) is exact when it fits 24 bits (|q − z| < 2⁸): no rounding here.
    for (int j = 0; j < kQK; ++j) out[b * kQK + j] += c;
  }
}
}  // namespace

void q4_0c_split(const void* q4_0c, void* q4_0, float* offsets, int64_t blocks) {
  split_offsets<BlockQ4_0C, BlockQ4_0>(q4_0c, q4_0, offsets, blocks);
}
void q8_0c_split(const void* q8_0c, void* q8_0, float* offsets, int64_t blocks) {
  split_offsets<BlockQ8_0C, BlockQ8_0>(q8_0c, q8_0, offsets, blocks);
}
void dequantize_q4_0c(const void* w, float* out, int64_t K) {
  dequantize_offsets<BlockQ4_0C, BlockQ4_0>(w, out, K, dequantize_q4_0);
}
void dequantize_q8_0c(const void* w, float* out, int64_t K) {
  dequantize_offsets<BlockQ8_0C, BlockQ8_0>(w, out, K, dequantize_q8_0);
}

int load_only_block_bytes(WType t) {
  switch (t) {
    case WType::q5_0: return int(sizeof(BlockQ5_0));
    case WType::q4_1: return int(sizeof(BlockQ4_1));
    case WType::q5_1: return int(sizeof(BlockQ5_1));
    case WType::iq4_nl: return int(sizeof(BlockIQ4_NL));
    case WType::q4_0c: return int(sizeof(BlockQ4_0C));
    case WType::q8_0c: return int(sizeof(BlockQ8_0C));
    default: return 0;
  }
}

}  // namespace headwise::kernels::quant
