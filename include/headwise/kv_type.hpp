// The element type of a session's KV cache. Activations, norms and every computation
// stay fp32; only the cached K and V rows are stored narrower, rounded to nearest even
// when written and widened in registers by the attention kernels when read.
//   f32   4 bytes, exact (the default)
//   f16   2 bytes, IEEE binary16: 11-bit significand, range ±65504 (llama.cpp's default)
//   bf16  2 bytes, bfloat16: 8-bit significand, the fp32 range
#pragma once

#include <cstddef>
#include <string>

namespace headwise {

enum class KvType { f32 = 0, f16 = 1, bf16 = 2 };

inline size_t kv_type_bytes(KvType t) { return t == KvType::f32 ? 4 : 2; }

inline const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::f32: return "f32";
    case KvType::f16: return "f16";
    case KvType::bf16: return "bf16";
  }
  return "?";
}

// "f32" | "f16" | "bf16" → *out; false (and *out unchanged) for anything else.
inline bool parse_kv_type(const std::string& text, KvType* out) {
  if (text == "f32") *out = KvType::f32;
  else if (text == "f16") *out = KvType::f16;
  else if (text == "bf16") *out = KvType::bf16;
  else return false;
  return true;
}

}  // namespace headwise
