#include "kernels/dispatch.hpp"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>

namespace headwise::kernels {
namespace {

Isa detect() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("fma"))
    return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
  return Isa::scalar;
}

struct EnvCap {
  Isa isa;
  std::string error;
};

const EnvCap& env_cap() {
  static const EnvCap cap = [] {
    EnvCap c{detected_isa(), {}};
    const char* env = std::getenv("HEADWISE_ISA");
    if (env == nullptr || *env == '\0') return c;
    Isa want;
    if (!parse_isa(env, &want)) {
      c.error = std::string("HEADWISE_ISA='") + env + "' is not one of avx512, avx2, scalar";
    } else if (static_cast<int>(want) > static_cast<int>(c.isa)) {
      c.error = std::string("HEADWISE_ISA=") + env + " but this CPU only supports " +
                isa_name(c.isa);
    } else {
      c.isa = want;
    }
    return c;
  }();
  return cap;
}

// -1: no override.
std::atomic<int> g_override{-1};
std::atomic<int> g_amx_override{-1};

bool detect_amx() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!(d & (1u << 24)) || !(d & (1u << 22))) return false;  // AMX-TILE, AMX-BF16
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;  // XTILECFG, XTILEDATA enabled
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kGetXcompPerm = 0x1022, kXtiledata = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) != 0) return false;
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kGetXcompPerm, &granted) != 0) return false;
  return (granted >> kXtiledata) & 1;
#else
  return false;
#endif
}

struct AmxEnv {
  bool on = true;
  std::string error;
};

const AmxEnv& amx_env() {
  static const AmxEnv e = [] {
    AmxEnv r;
    const char* env = std::getenv("HEADWISE_AMX");
    if (env == nullptr || *env == '\0') return r;
    const std::string v = env;
    if (v == "0") r.on = false;
    else if (v != "1") r.error = "HEADWISE_AMX='" + v + "' is not 0 or 1";
    else if (!amx_detected()) r.error = "HEADWISE_AMX=1 but this CPU (or its OS) does not offer AMX";
    return r;
  }();
  return e;
}

}  // namespace

bool amd_family_model(unsigned* family, unsigned* model) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  *family = ((a >> 8) & 0xF) + ((a >> 20) & 0xFF);
  *model = ((a >> 4) & 0xF) | ((a >> 12) & 0xF0);
  return true;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

bool may_use(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(detected_isa()); }

bool parse_isa(const std::string& text, Isa* out) {
  if (text == "avx512") *out = Isa::avx512;
  else if (text == "avx2") *out = Isa::avx2;
  else if (text == "scalar") *out = Isa::scalar;
  else return false;
  return true;
}

Isa active_isa() {
  const int o = g_override.load(std::memory_order_relaxed);
  if (o >= 0) return static_cast<Isa>(o);
  return env_cap().isa;
}

const std::string& isa_env_error() { return env_cap().error; }

bool set_isa_override(Isa isa) {
  if (!may_use(isa)) return false;
  g_override.store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

void clear_isa_override() { g_override.store(-1, std::memory_order_relaxed); }

bool amx_detected() {
  static const bool amx = detect_amx();
  return amx;
}

bool amx_usable() {
  if (!amx_detected() || active_isa() != Isa::avx512) return false;
  const int o = g_amx_override.load(std::memory_order_relaxed);
  return o >= 0 ? o != 0 : amx_env().on;
}

const std::string& amx_env_error() { return amx_env().error; }

bool set_amx_override(bool on) {
  if (on && !amx_detected()) return false;
  g_amx_override.store(on ? 1 : 0, std::memory_order_relaxed);
  return true;
}

void clear_amx_override() { g_amx_override.store(-1, std::memory_order_relaxed); }

}  // namespace headwise::kernels
