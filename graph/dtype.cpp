// DType names and sizes, TensorView helpers, and the f16/bf16 → f32 conversions.
// The conversions are done on the bit patterns in software (no F16C) so that this
// baseline translation unit runs on any x86-64 and is exact for every input,
// subnormals, infinities and NaN payloads included.
#include <cstring>
#include <sstream>

#include "graph/weights.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::graph {

const char* dtype_name(DType t) {
  // The safetensors spelling, so that names in headers and messages agree.
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::q8_0: return "Q8_0";
    case DType::q4_0: return "Q4_0";
    case DType::q4_k: return "Q4_K";
    case DType::q5_k: return "Q5_K";
    case DType::q6_k: return "Q6_K";
    case DType::q4_1: return "Q4_1";
    case DType::q5_1: return "Q5_1";
    case DType::q3_k: return "Q3_K";
    case DType::iq4_xs: return "IQ4_XS";
    case DType::q2_k: return "Q2_K";
    case DType::q4_0c: return "Q4_0C";
    case DType::q8_0c: return "Q8_0C";
    case DType::i32: return "I32";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::q8_0: case DType::q4_0: case DType::q4_k: case DType::q5_k: case DType::q6_k:
    case DType::q4_1: case DType::q5_1: case DType::q3_k: case DType::iq4_xs: case DType::q2_k:
    case DType::q4_0c: case DType::q8_0c: return 0;
  }
  return 0;
}

bool dtype_is_block(DType t) { return dtype_size(t) == 0; }

size_t dtype_row_bytes(DType t, int64_t cols) {
  if (!dtype_is_block(t)) return dtype_size(t) * size_t(cols);
  if (const int bb = kernels::quant::load_only_block_bytes(dtype_quant_type(t)))  // Q4_1, Q5_1, Q4_0C, Q8_0C
    return size_t(cols / kernels::quant::kLoadOnlyBlock) * size_t(bb);
  return kernels::quant::row_bytes(*kernels::quant::type_info(dtype_quant_type(t)), cols);
}

int64_t TensorView::numel() const {
  int64_t n = 1;  // a shape of [] is a scalar: one element
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::shape_str() const {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f)  // inf or NaN: keep the payload (quiet/signalling bit included)
    return from_bits(sign | 0x7f800000u | (mant << 13));
  if (exp != 0)  // normal: rebias 15 → 127
    return from_bits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
  if (mant == 0) return from_bits(sign);  // ±0
  // Subnormal: mant · 2^-24. Shift the leading 1 up to the implicit-bit position
  // (bit 10); every f16 subnormal is a normal f32, value 1.f · 2^(-14 - shifts).
  int shifts = 0;
  while (!(mant & 0x400u)) {
    mant <<= 1;
    ++shifts;
  }
  return from_bits(sign | (uint32_t(127 - 14 - shifts) << 23) | ((mant & 0x3ffu) << 13));
}

// bfloat16 is the top half of an f32, so widening is exact by construction.
float bf16_to_f32(uint16_t b) { return from_bits(uint32_t(b) << 16); }

}  // namespace

void to_f32(DType t, const uint8_t* src, size_t n, float* dst) {
  // Element loads go through memcpy: views into a mapping need not be aligned
  // (a foreign safetensors header length can be any number of bytes).
  if (n == 0) return;  // src/dst may be null for an empty tensor
  switch (t) {
    case DType::f32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::f16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      return;
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        dst[i] = bf16_to_f32(b);
      }
      return;
    case DType::q8_0: case DType::q4_0: case DType::q3_k: case DType::q4_k: case DType::q5_k: case DType::q6_k:
    case DType::iq4_xs: case DType::q2_k: {
      // blocks lie back to back across rows: one pass over all n elements
      const auto* ti = kernels::quant::type_info(dtype_quant_type(t));
      ti->dequantize(src, dst, int64_t(n));
      return;
    }
    case DType::q4_1: kernels::quant::dequantize_q4_1(src, dst, int64_t(n)); return;
    case DType::q5_1: kernels::quant::dequantize_q5_1(src, dst, int64_t(n)); return;
    case DType::q4_0c: kernels::quant::dequantize_q4_0c(src, dst, int64_t(n)); return;
    case DType::q8_0c: kernels::quant::dequantize_q8_0c(src, dst, int64_t(n)); return;
    case DType::i32:
      for (size_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, src + 4 * i, 4);
        dst[i] = float(v);
      }
      return;
  }
}

kernels::quant::WType dtype_quant_type(DType t) {
  using kernels::quant::WType;
  switch (t) {
    case DType::f16: return WType::f16;
    case DType::bf16: return WType::bf16;
    case DType::q8_0: return WType::q8_0;
    case DType::q4_0: return WType::q4_0;
    case DType::q4_k: return WType::q4_k;
    case DType::q5_k: return WType::q5_k;
    case DType::q6_k: return WType::q6_k;
    case DType::q4_1: return WType::q4_1;
    case DType::q5_1: return WType::q5_1;
    case DType::q3_k: return WType::q3_k;
    case DType::iq4_xs: return WType::iq4_xs;
    case DType::q2_k: return WType::q2_k;
    case DType::q4_0c: return WType::q4_0c;
    case DType::q8_0c: return WType::q8_0c;
    case DType::f32: case DType::i32: break;
  }
  return WType::f32;
}

}  // namespace headwise::graph
