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

}  // namespace headwise::kernels
