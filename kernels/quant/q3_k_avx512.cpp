// Q3_K products on avx512 (AVX512-VNNI vpdpbusd): the linear-registry entry, on the weights
// repacked at load into 16-row panels, one per zmm (panel_k_x86.hpp, PanelQ3K), for decode
// and prefill alike. GGUF rows as stored are multiplied only by the scalar entry
// (q3_k_scalar.cpp).
#include "kernels/quant/panel_k_x86.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q3_k__avx512 =
    quant::PanelKLinear<quant::PanelQ3K<16>, quant::V16Far, quant::V16Far, 4, true>::impl("q3_K_panel16");
}  // namespace headwise::kernels
