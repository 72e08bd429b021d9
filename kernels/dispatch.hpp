// Run-time ISA selection: the one place that looks at the CPU.
//
// ISAs form a lattice, scalar < avx2 < avx512. The best one this CPU has is
// detected once; the environment variable HEADWISE_ISA=avx512|avx2|scalar caps it
// (like oneDNN's ONEDNN_MAX_CPU_ISA). Kernels never query the CPU themselves: a plan
// asks active_isa() once, when it is built, and selects each op's kernels from the op's
// list for that ISA (kernels/registry.hpp); only the public per-call functions
// (headwise::attention()) ask at each call.
#pragma once

#include <string>

namespace headwise::kernels {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

const char* isa_name(Isa isa);

// The best ISA this CPU supports (AVX2 means AVX2+FMA; AVX-512 means F+BW+DQ+VL).
Isa detected_isa();

// The ISA kernels use: detected_isa(), capped by HEADWISE_ISA or set_isa_override().
Isa active_isa();

// True when this CPU can run kernels of `isa`.
bool may_use(Isa isa);

// Parses "avx512" | "avx2" | "scalar". Returns false on anything else.
bool parse_isa(const std::string& text, Isa* out);

// Why HEADWISE_ISA could not be honoured (empty when it was, or when unset).
// An ISA the CPU lacks, or an unknown name, is an error the public API reports.
const std::string& isa_env_error();

// Programmatic cap for tests and tools (takes precedence over the environment). It
// applies to plans built afterwards and to per-call functions, never to a plan already
// built. Returns false (and changes nothing) when the CPU lacks `isa`.
bool set_isa_override(Isa isa);
void clear_isa_override();

// An AMD CPU's family and model (cpuid leaf 1, extended fields folded in: Zen 1-2 17h,
// Zen 3-4 19h, Zen 5 1Ah); false on any other vendor. For the choices a kernel's speed,
// never its results, depends on (quant.hpp's cpu_* answers, cpu_attn_ahead).
bool amd_family_model(unsigned* family, unsigned* model);

// AMX, Intel's tile matrix unit (bf16 tiles, TDPBF16PS): an extra a kernel list may ask
// for beside its ISA (attention.inc's amx lines). Detected once: the CPU has AMX-TILE
// and AMX-BF16 (CPUID 7.0 EDX bits 24 and 22), the OS saves the tile state (XCR0 bits
// 17-18) and Linux grants this process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM,
// asked here once; without it the first tile instruction faults).
bool amx_detected();
// Whether kernels may use AMX now: amx_detected(), the active ISA avx512, and not turned
// off by HEADWISE_AMX=0 (like HEADWISE_ISA, a cap read once) or set_amx_override(false).
bool amx_usable();
// Why HEADWISE_AMX could not be honoured (empty when it was, or when unset): a value
// other than 0 or 1, or 1 on a CPU without AMX.
const std::string& amx_env_error();
// Programmatic switch for tests and tools, applying to plans built afterwards; true asks
// for AMX where amx_detected() (returns false and changes nothing elsewhere).
bool set_amx_override(bool on);
void clear_amx_override();

}  // namespace headwise::kernels
