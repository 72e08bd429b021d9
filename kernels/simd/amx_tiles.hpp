// AMX tile set-up shared by the *_amx.cpp kernels (attention's prefill, the bf16 GEMM
// panels): include only from translation units built with AMX flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace headwise::kernels {

// Every tile 16 rows of 64 bytes (palette 1). Each kernel call configures on entry and
// releases (_tile_release) on exit: the tile state belongs to the calling thread.
inline void amx_configure() {
  alignas(64) uint8_t cfg[64] = {};
  cfg[0] = 1;
  for (int t = 0; t < 8; ++t) {
    cfg[16 + 2 * t] = 64;  // bytes per row (uint16, little-endian)
    cfg[48 + t] = 16;      // rows
  }
  _tile_loadconfig(cfg);
}

// GCC's tile loads are asm statements without a memory operand: this keeps the vector
// stores that fill a buffer ahead of the tile loads that read it.
inline void amx_fence() { __asm__ volatile("" ::: "memory"); }

}  // namespace headwise::kernels
