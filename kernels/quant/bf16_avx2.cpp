// BF16 products on avx2: the linear-registry entry, on the weights repacked at load into
// 16-row panels (panel_half_avx2.hpp), decode and prefill alike: bf16 → fp32 is a 16-bit
// shift (exact), then FMA against the inputs rounded to bf16 (the values vdpbf16ps
// multiplies on avx512). Rows as stored are multiplied only by the scalar and avx512
// entries.
#include "kernels/quant/panel_half_avx2.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_bf16__avx2 = quant::HalfPanelLinear<quant::WidenBf16>::impl("bf16_panel16");
}  // namespace headwise::kernels
