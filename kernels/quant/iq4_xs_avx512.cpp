// IQ4_XS products on avx512 (AVX512-VNNI vpdpbusd on the levels looked up by vpshufb):
// the linear-registry entry, on the weights repacked at load into 16-row panels, one per
// zmm (panel_iq4_xs_x86.hpp), for decode and prefill alike. GGUF rows as stored are
// multiplied only by the scalar entry (iq4_xs_scalar.cpp).
#include "kernels/quant/panel_iq4_xs_x86.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_iq4_xs__avx512 =
    quant::PanelKLinear<quant::PanelIQ4XS<16>, quant::V16Far, quant::V16Far, 4, true>::impl("iq4_XS_panel16");
}  // namespace headwise::kernels
