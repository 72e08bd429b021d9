// AMX tile probe: the TDPBF16PS rate (16×16 fp32 sums, each of 32 bf16 products), the
// ceiling of the prefill projections that run on the AMX panels
// (kernels/matmul/gemm_bf16_amx.hpp). Four independent accumulators, as the panels'
// 2 × 2 blocks keep: tile registers are not renamed, so products on one accumulator
// serialize. Operands stay in tiles (no loads): the unit's own rate. Call only where
// kernels::amx_usable() (peak.cpp checks).
#include <immintrin.h>

#include <cstdint>

#include "bench/probe/probe.hpp"
#include "kernels/simd/amx_tiles.hpp"

namespace headwise::kernels {

double tile_bf16_probe_amx(int64_t iters, float* sink) {
  amx_configure();
  alignas(64) uint16_t ones[16][32];
  for (auto& row : ones)
    for (uint16_t& v : row) v = 0x3F80;  // 1.0
  alignas(64) float out[16][16];
  amx_fence();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  amx_fence();
  *sink += out[0][0];
  return 2.0 * 16 * 16 * 32 * 4 * double(iters);  // flops: 2 per multiply-add
}

}  // namespace headwise::kernels
