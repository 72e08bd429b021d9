// Q4_K products on avx512 (AVX512-VNNI vpdpbusd). The linear-registry entry reads the
// weights repacked at load into 8-row panels, two panels per zmm (panel_k_x86.hpp). The
// catalogue's GemvFn (quant.inc) reads GGUF rows: one row at a time for one input
// (dot_x86.hpp), register tiles for more (tile_x86.hpp); and rows dequantized to bf16.
#include "kernels/quant/tile_x86.hpp"
#include "kernels/quant/panel_k_x86.hpp"

namespace headwise::kernels::quant {

void gemv_q4_k__avx512(const void* w, size_t rb, int64_t n0, int64_t n1, const void* xa, size_t ab,
                    int M, int64_t K, float* y, int64_t ldy) {
  if (M == 1) gemv_rows<dot_q4_k<DpbusdVnni>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
  else gemm_tiled<TQ4_K<DpbusdVnni>>(w, rb, n0, n1, xa, ab, M, K, y, ldy);
}

void dequant_bf16_q4_k__avx512(const void* w, size_t rb, int64_t n0, int64_t n1, int64_t K, uint16_t* out,
                          int64_t ldo) {
  dequant_rows_bf16<TQ4_K<DpbusdVnni>>(w, rb, n0, n1, K, out, ldo);
}

}  // namespace headwise::kernels::quant

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q4_k__avx512 =
    quant::PanelKLinear<quant::PanelQ4K, quant::V16, quant::V8<quant::DpbusdVnni>, 4, true>::impl("q4_K_panel8");
}  // namespace headwise::kernels
