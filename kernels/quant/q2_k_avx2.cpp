// Q2_K products on avx2 (vpmaddubsw + vpmaddwd): the linear-registry entry, on the weights
// repacked at load into 8-row panels (panel_q2_k_x86.hpp), for decode and prefill alike.
// GGUF rows as stored are multiplied only by the scalar entry (q2_k_scalar.cpp).
#include "kernels/quant/panel_q2_k_x86.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q2_k__avx2 =
    quant::PanelKLinear<quant::PanelQ2K<8>, quant::V8<quant::MaddAvx2>, quant::V8<quant::MaddAvx2>, 3, false>::impl("q2_K_panel8");
}  // namespace headwise::kernels
