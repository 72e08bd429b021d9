// 16-bit floating-point element types of the KV cache, and their exact scalar
// conversions (the portable path, and the oracle the vector ones must match bit for bit).
//
// Rounding fp32 → 16 bits is round-to-nearest-even, like F16C's vcvtps2ph with
// _MM_FROUND_TO_NEAREST_INT: values past the largest finite f16 (65504, halfway point
// 65520) become ±inf, small ones become f16 subnormals (no flush to zero). NaN stays NaN
// (made quiet, sign and top payload bits kept). Widening 16 → 32 bits is exact.
#pragma once

#include <cstdint>
#include <cstring>

namespace headwise::kernels {

// Element tags the attention kernels are templated on: storage type T and how to widen.
struct KvF32 { using T = float; };
struct KvF16 { using T = uint16_t; };   // IEEE binary16
struct KvBf16 { using T = uint16_t; };  // bfloat16: the top half of an fp32

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float f32_from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));  // inf, NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
  const float sub = float(man) * 0x1p-24f;  // subnormal (or zero): man · 2^−24, exact
  return sign ? -sub : sub;
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN: quiet
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // ≥ 65520 rounds to inf
  if (ax >= 0x38800000u) {                                 // normal: ≥ 2^−14
    uint32_t r = ax - 0x38000000u;                         // rebias 127 → 15
    r += 0xfffu + ((r >> 13) & 1u);                        // round to nearest even
    return uint16_t(sign | (r >> 13));                     // a carry bumps the exponent
  }
  // Subnormal result: ax = m · 2^(e − 150), in units of 2^−24 that is m >> (126 − e).
  const int e = int(ax >> 23);
  const int shift = 126 - e;
  if (e == 0 || shift > 24) return sign;  // below half of the smallest subnormal
  const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may become the smallest normal
  return uint16_t(sign | q);
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // NaN: quiet
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);                 // nearest even
}

inline float widen(KvF32, float x) { return x; }
inline float widen(KvF16, uint16_t x) { return f16_to_f32(x); }
inline float widen(KvBf16, uint16_t x) { return bf16_to_f32(x); }

}  // namespace headwise::kernels
