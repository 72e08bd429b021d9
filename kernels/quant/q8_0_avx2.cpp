// Q8_0 products on avx2: int8 dot products with vpmaddubsw + vpmaddwd; the registry entry
// on rows repacked into panels of 8 (interleave_x86.hpp); the catalogue's GemvFn on the
// stored rows, one row at a time for one input row (dot_x86.hpp), register tiles for more
// (tile_x86.hpp).
#include "kernels/quant/tile_x86.hpp"
#include "kernels/quant/interleave_x86.hpp"

namespace headwise::kernels::quant {

void gemv_q8_0__avx2(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                    int M, int64_t K, float* y, int64_t ldy) {
  if (M == 1) gemv_rows<dot_q8_0<MaddAvx2>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
  else gemm_tiled<TQ8_0<MaddAvx2>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc): rows repacked at load into
// panels of 8 (interleave_x86.hpp), for decode and prefill alike.
extern const LinearKernelImpl linear_q8_0__avx2 =
    quant::PanelLinear<quant::PanelQ8_0<quant::MaddAvx2>, quant::WType::q8_0, WeightType::q8_0, false>::impl("q8_0");
}  // namespace headwise::kernels
