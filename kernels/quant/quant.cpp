// The catalogue's type table and the product-kernel lookup (quant.inc).
#include "kernels/quant/quant.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cctype>
#include <string>

#include "kernels/quant/blocks.hpp"

namespace headwise::kernels::quant {

#define HW_QUANT(type, isa, symbol)                                                      \
  void symbol(const void* w, size_t row_bytes, int64_t n0, int64_t n1, const void* xa, \
              size_t act_bytes, int M, int64_t K, float* y, int64_t ldy);
#include "kernels/quant/quant.inc"
#undef HW_QUANT

#define HW_QUANT_TYPE(t)                    \
  void quantize_##t(const float*, void*, int64_t); \
  void dequantize_##t(const void*, float*, int64_t);
HW_QUANT_TYPE(f16)
HW_QUANT_TYPE(bf16)
HW_QUANT_TYPE(q8_0)
HW_QUANT_TYPE(q4_0)
HW_QUANT_TYPE(q2_k)
HW_QUANT_TYPE(q3_k)
HW_QUANT_TYPE(q4_k)
HW_QUANT_TYPE(q5_k)
HW_QUANT_TYPE(q6_k)
HW_QUANT_TYPE(iq4_xs)
#undef HW_QUANT_TYPE

namespace {

// type, GGUF name, block, block bytes, input kind, reference quantize/dequantize
const TypeInfo kTypes[] = {
    {WType::f16, "f16", 1, 2, ActKind::f32, quantize_f16, dequantize_f16},
    {WType::bf16, "bf16", 1, 2, ActKind::bf16, quantize_bf16, dequantize_bf16},
    {WType::q8_0, "q8_0", kQK, sizeof(BlockQ8_0), ActKind::q8a, quantize_q8_0, dequantize_q8_0},
    {WType::q4_0, "q4_0", kQK, sizeof(BlockQ4_0), ActKind::q8a, quantize_q4_0, dequantize_q4_0},
    {WType::q2_k, "q2_K", kQKK, sizeof(BlockQ2_K), ActKind::q8a, quantize_q2_k, dequantize_q2_k},
    {WType::q3_k, "q3_K", kQKK, sizeof(BlockQ3_K), ActKind::q8a, quantize_q3_k, dequantize_q3_k},
    {WType::q4_k, "q4_K", kQKK, sizeof(BlockQ4_K), ActKind::q8a, quantize_q4_k, dequantize_q4_k},
    {WType::q5_k, "q5_K", kQKK, sizeof(BlockQ5_K), ActKind::q8a, quantize_q5_k, dequantize_q5_k},
    {WType::q6_k, "q6_K", kQKK, sizeof(BlockQ6_K), ActKind::q8a, quantize_q6_k, dequantize_q6_k},
    {WType::iq4_xs, "iq4_XS", kQKK, sizeof(BlockIQ4_XS), ActKind::q8a, quantize_iq4_xs, dequantize_iq4_xs},
};
constexpr int kTypeCount = sizeof(kTypes) / sizeof(kTypes[0]);

const WType kTypeList[] = {WType::f16, WType::bf16, WType::q8_0, WType::q4_0, WType::q2_k, WType::q3_k, WType::q4_k, WType::q5_k, WType::q6_k,
                           WType::iq4_xs};
static_assert(sizeof(kTypeList) / sizeof(kTypeList[0]) == kTypeCount, "one list entry per type");

bool detect_vnni_bf16() {
  __builtin_cpu_init();
  return may_use(Isa::avx512) && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512bf16");
}

// AMD family 17h below model 30h: Zen 1 and Zen+ (Zen 2, also family 17h, has full-width
// vector units).
bool detect_int8_multiply_slow() {
  unsigned family, model;
  return amd_family_model(&family, &model) && family == 0x17 && model < 0x30;
}

std::atomic<int> int8_multiply_slow_override{-1};

bool detect_bf16_dot_slow() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;  // "GenuineIntel"
#else
  return false;
#endif
}

std::atomic<int> bf16_dot_slow_override{-1};

// AMD only (quant.hpp says why), and on avx512 not family 19h: Zen 4, which executes
// each 512-bit operation as two 256-bit halves (Zen 3, also 19h, has no AVX-512; Zen 5
// is family 1Ah).
bool detect_decode_nontemporal(Isa isa) {
  unsigned family, model;
  return amd_family_model(&family, &model) && (isa != Isa::avx512 || family != 0x19);
}

std::atomic<int> decode_nontemporal_override{-1};

}  // namespace

const TypeInfo* type_info(WType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return &i;
  return nullptr;
}

const WType* all_types(int* count) {
  *count = kTypeCount;
  return kTypeList;
}

bool parse_wtype(const char* s, WType* out) {
  std::string l;
  for (const char* p = s; *p; ++p) l += char(std::tolower(static_cast<unsigned char>(*p)));
  for (const TypeInfo& i : kTypes) {
    std::string n;
    for (const char* p = i.name; *p; ++p) n += char(std::tolower(static_cast<unsigned char>(*p)));
    if (n == l) {
      *out = i.type;
      return true;
    }
  }
  return false;
}

void q5_0_to_q8_0(const void* q5_0, void* q8_0, int64_t blocks) {
  const auto* in = static_cast<const BlockQ5_0*>(q5_0);
  auto* out = static_cast<BlockQ8_0*>(q8_0);
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockQ5_0& x = in[b];
    BlockQ8_0& y = out[b];
    const uint32_t qh = uint32_t(x.qh[0]) | uint32_t(x.qh[1]) << 8 | uint32_t(x.qh[2]) << 16 | uint32_t(x.qh[3]) << 24;
    y.d = x.d;
    for (int j = 0; j < kQK / 2; ++j) {
      y.q[j] = int8_t(int((x.q[j] & 0x0F) | ((qh >> j) & 1) << 4) - 16);
      y.q[j + kQK / 2] = int8_t(int((x.q[j] >> 4) | ((qh >> (j + kQK / 2)) & 1) << 4) - 16);
    }
  }
}

bool cpu_has_avx512_vnni_bf16() {
  static const bool has = detect_vnni_bf16();
  return has;
}

bool cpu_int8_multiply_slow() {
  static const bool slow = detect_int8_multiply_slow();
  const int o = int8_multiply_slow_override.load(std::memory_order_relaxed);
  return o < 0 ? slow : o != 0;
}

void set_int8_multiply_slow_override(int v) { int8_multiply_slow_override.store(v < 0 ? -1 : v != 0); }

bool cpu_is_intel() {
  static const bool intel = detect_bf16_dot_slow();  // (that detection is the vendor's)
  return intel;
}

bool cpu_bf16_dot_slow() {
  static const bool slow = detect_bf16_dot_slow();
  const int o = bf16_dot_slow_override.load(std::memory_order_relaxed);
  return o < 0 ? slow : o != 0;
}

void set_bf16_dot_slow_override(int v) { bf16_dot_slow_override.store(v < 0 ? -1 : v != 0); }

bool cpu_decode_nontemporal(Isa isa) {
  static const bool on_avx512 = detect_decode_nontemporal(Isa::avx512);
  static const bool on_avx2 = detect_decode_nontemporal(Isa::avx2);
  const int o = decode_nontemporal_override.load(std::memory_order_relaxed);
  return o < 0 ? (isa == Isa::avx512 ? on_avx512 : on_avx2) : o != 0;
}

void set_decode_nontemporal_override(int v) { decode_nontemporal_override.store(v < 0 ? -1 : v != 0); }

GemvFn gemv_kernel(WType t, Isa isa) {
  if (isa == Isa::avx512 && !cpu_has_avx512_vnni_bf16()) isa = Isa::avx2;
  if (!may_use(isa)) return nullptr;
#define HW_QUANT(type, i, symbol) \
  if (t == WType::type && isa == Isa::i) return symbol;
#include "kernels/quant/quant.inc"
#undef HW_QUANT
  return nullptr;
}

}  // namespace headwise::kernels::quant
