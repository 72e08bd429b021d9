// GGUF's weight block layouts (the byte layouts of ggml's quantized types), and the
// scalar half/bfloat16 conversions every ISA shares.
//
// Written from the published format (GGUF specification and the type list in ggml.h):
// a tensor row of K elements is K / block blocks stored back to back, no padding.
//   F16   IEEE binary16                        x = half
//   BF16  upper 16 bits of binary32            x = bf16
//   Q8_0  32 values:  d (f16), q[32] int8      x = d·q
//   Q4_0  32 values:  d (f16), 16 bytes        x = d·(q − 8), q ∈ [0, 15];
//                     element j < 16 is the low nibble of byte j, element j + 16 its high nibble
//   Q5_0  32 values:  d (f16), qh (uint32), 16 bytes   x = d·(q − 16), q ∈ [0, 31]; the
//                     low 4 bits as Q4_0's nibbles, bit j of qh the 5th bit of element j.
//                     Not computed on: re-encoded exactly as Q8_0 at load (q5_0_to_q8_0)
//   Q4_1  32 values:  d, m (f16), 16 bytes     x = d·q + m, q ∈ [0, 15], nibbles as Q4_0's
//   Q5_1  32 values:  d, m (f16), qh, 16 bytes x = d·q + m, q ∈ [0, 31], bits as Q5_0's.
//                     Not computed on: re-encoded as Q8_0 plus a per-block offset at
//                     load (load_only.cpp)
//   Q4_K  256 values: d, dmin (f16), 12 bytes of 6-bit scales/mins, 128 bytes of nibbles;
//                     8 sub-blocks of 32, x = d·sc_j·q − dmin·m_j, q ∈ [0, 15];
//                     bytes 32c..32c+31 hold sub-block 2c in their low nibbles, 2c+1 in the high
//   Q5_K  as Q4_K plus qh[32]: bit (2c) of qh[l] is the 5th bit of element l of sub-block
//                     2c, bit (2c + 1) that of sub-block 2c + 1; q ∈ [0, 31]
//   Q2_K  256 values: 16 bytes of 4-bit scales and mins, qs[64], d, dmin (f16); 16 sub-blocks
//                     of 16, x = d·sc_j·q − dmin·m_j (sc_j: scales[j]'s low nibble, m_j its
//                     high), q ∈ [0, 3] with Q3_K's low-bit layout (q2_k_scalar.cpp)
//   Q3_K  256 values: hmask[32], qs[64], 12 bytes of 6-bit scales, d (f16); 16 sub-blocks
//                     of 16, x = d·(sc_j − 32)·(q − 4), q ∈ [0, 7] (layout in q3_k_scalar.cpp)
//   Q6_K  256 values: ql[128] low nibbles, qh[64] high 2 bits, 16 int8 scales, d (f16);
//                     16 sub-blocks of 16, x = d·sc_j·(q − 32), q ∈ [0, 63] (layout in q6_k_scalar.cpp)
//   IQ4_NL 32 values: d (f16), 16 bytes        x = d·kIq4Values[q], q ∈ [0, 15], nibbles as
//                     Q4_0's. Not computed on: re-encoded exactly as Q8_0 at load (the
//                     table's values are int8: iq4_nl_to_q8_0)
//   IQ4_XS 256 values: d (f16), scales_h (u16), scales_l[4], 128 bytes of nibbles; 8
//                     sub-blocks of 32, x = d·(sc_j − 32)·kIq4Values[q] with 6-bit sc_j
//                     (iq4_xs_scale); sub-block j's 16 bytes at 16j hold its elements
//                     l < 16 in their low nibbles, l + 16 in the high
#pragma once

#include <cstdint>
#include <cstring>

namespace headwise::kernels::quant {

constexpr int kQK = 32;    // block of Q8_0, Q4_0 and of the int8 activations
constexpr int kQKK = 256;  // super-block of the K-quants

struct BlockQ8_0 {
  uint16_t d;
  int8_t q[kQK];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t q[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // a little-endian uint32 (bytes: the block is 2-byte aligned)
  uint8_t q[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t q[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];  // a little-endian uint32, as Q5_0's
  uint8_t q[kQK / 2];
};
// Hugging Face GPTQ and AWQ weights with zero points (formats/hf_quantized.cpp), never in
// a GGUF file: a Q4_0 or Q8_0 block of the same scale d and the stored integers re-centred
// (q − 8 for 4 bits, q − 128 for 8), and the block's offset c = d·(8 − z) or d·(128 − z)
// as an f32 (little-endian bytes: the blocks are 2-byte aligned), so x = d·(q − z) =
// (the Q4_0/Q8_0 value) + c exactly. Products: the Q4_0/Q8_0 ones plus Σ_blocks c·(the
// block's input sum) (graph/projection.hpp, create_offset_blocks).
struct BlockQ4_0C {
  BlockQ4_0 b;
  uint8_t c[4];
};
struct BlockQ8_0C {
  BlockQ8_0 b;
  uint8_t c[4];
};
static_assert(sizeof(BlockQ4_0C) == 22 && sizeof(BlockQ8_0C) == 38, "packed as documented");
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t q[kQKK / 2];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t q[kQKK / 2];
};
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];  // sub-block j: the scale in the low nibble of scales[j], the min in the high
  uint8_t qs[kQKK / 4];       // bits 2k, 2k + 1 of qs[32h + l]: element 128h + 32k + l
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];  // bit j of hmask[l]: the 3rd bit of element 32j + l
  uint8_t qs[kQKK / 4];     // bits 2k, 2k + 1 of qs[32h + l]: the low bits of element 128h + 32k + l
  uint8_t scales[12];       // 16 6-bit scales (q3_k_scale)
  uint16_t d;
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22, "GGUF block sizes");
static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_1) == 24, "GGUF block sizes");
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t q[kQK / 2];
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;  // bits 2j, 2j + 1: the top 2 bits of sub-block j's scale
  uint8_t scales_l[kQKK / 64];  // the low 4 bits of sub-block 2i's scale in byte i's low nibble, 2i + 1's in the high
  uint8_t q[kQKK / 2];
};
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110, "GGUF block sizes");
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136, "GGUF block sizes");

// IQ4_NL's and IQ4_XS's 16 levels (ggml's kvalues_iq4nl, from the format): a non-uniform
// grid, denser near 0, every one an int8.
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210,
              "GGUF block sizes");

// Activations for the int8 dot products: 32 values quantized symmetrically to
// [−127, 127] (never −128, so |q| fits the AVX2 sign trick), with the sums of each
// half precomputed (the weight types with an offset, q − 8 or q − 32, subtract
// offset·Σx instead of widening every weight).
struct BlockQ8A {
  float d;
  int16_t sum[2];  // Σ q over elements 0..15 and 16..31
  int8_t q[kQK];
};
static_assert(sizeof(BlockQ8A) == 40, "activation block");

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block: j < 4 in the low 6
// bits of bytes j and j + 4; j ≥ 4 as 4 low bits in byte j + 4 and 2 high bits in the
// top of bytes j − 4 (scale) and j (min).
inline void k_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The 6-bit scale of sub-block j (0..15) of a Q3_K block, stored + 32: its low 4 bits in
// the low (j < 8) or high (j ≥ 8) nibble of byte j % 8, its top 2 bits in bits
// 2(j / 4), 2(j / 4) + 1 of byte 8 + j % 4. Returns sc_j − 32 ∈ [−32, 31].
inline int q3_k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  return (low | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

// The scale of sub-block j (0..7) of an IQ4_XS block, stored + 32 in 6 bits: the low 4
// in scales_l, the top 2 in scales_h. Returns sc_j − 32 ∈ [−32, 31].
inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
  return (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | ((b.scales_h >> (2 * j)) & 3) << 4) - 32;
}

// Round to nearest, ties to even, for |x| < 2²²: adding 1.5·2²³ leaves no fraction bits,
// so the FPU's default rounding does the work (IEEE arithmetic: the compiler may not
// fold (x + b) − b without -ffast-math, which this project never uses). Larger |x| come
// back still large, which every caller clamps. (std::nearbyint is a libm call on
// baseline x86-64, which lacks SSE4.1's roundss: 30× slower in the quantizers.)
inline float round_even(float x) {
  constexpr float b = 12582912.0f;  // 1.5·2²³
  return (x + b) - b;
}
inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// binary16 → binary32, exact (subnormals, infinities and NaN included).
inline float half_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (exp == 0) {  // zero or subnormal: man · 2^-24
    const float v = float(man) * bits_f32(0x33800000u);  // 2^-24
    return bits_f32(f32_bits(v) | sign);
  }
  if (exp == 31) return bits_f32(sign | 0x7F800000u | (man << 13));
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

// binary32 → binary16, round to nearest even; overflow to ±inf, NaN stays NaN.
inline uint16_t f32_to_half(float f) {
  const uint32_t u = f32_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return uint16_t(sign | 0x7C00 | (a > 0x7F800000u ? 0x200 : 0));
  if (a >= 0x477FF000u) return uint16_t(sign | 0x7C00);  // rounds to ≥ 65520: inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal half, man = round(|f| · 2^24)
    const float v = bits_f32(a) * 16777216.0f;  // exact scaling by 2^24
    return uint16_t(sign | uint32_t(__builtin_nearbyintf(v)));  // default mode: to nearest even
  }
  const uint32_t rounded = a + 0xFFF + ((a >> 13) & 1);  // round mantissa to 10 bits, ties even
  return uint16_t(sign | ((rounded - (112u << 23)) >> 13));
}

inline float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }

// Round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

}  // namespace headwise::kernels::quant
