// IQ4_XS products on avx2 (levels looked up by vpshufb; vpmaddubsw on |level| and the
// inputs with the level's sign, + vpmaddwd against the scales): the linear-registry
// entry, on the weights repacked at load into 8-row panels (panel_iq4_xs_x86.hpp), for
// decode and prefill alike. GGUF rows as stored are multiplied only by the scalar entry
// (iq4_xs_scalar.cpp).
#include "kernels/quant/panel_iq4_xs_x86.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_iq4_xs__avx2 =
    quant::PanelKLinear<quant::PanelIQ4XS<8>, quant::V8<quant::MaddAvx2>, quant::V8<quant::MaddAvx2>, 3, false>::impl(
        "iq4_XS_panel8");
}  // namespace headwise::kernels
