// Q2_K products on avx512 (AVX512-VNNI vpdpbusd): the linear-registry entry, on the weights
// repacked at load into 16-row panels, one per zmm (panel_q2_k_x86.hpp), for decode and
// prefill alike. GGUF rows as stored are multiplied only by the scalar entry
// (q2_k_scalar.cpp).
#include "kernels/quant/panel_q2_k_x86.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q2_k__avx512 =
    quant::PanelKLinear<quant::PanelQ2K<16>, quant::V16Far, quant::V16Far, 4, true>::impl("q2_K_panel16");
}  // namespace headwise::kernels
