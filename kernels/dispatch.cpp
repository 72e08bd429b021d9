#include "kernels/dispatch.hpp"

#include <atomic>
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

}  // namespace

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

}  // namespace headwise::kernels
