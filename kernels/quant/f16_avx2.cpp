// F16 products on avx2: the linear-registry entry, on the weights repacked at load into
// 16-row panels (panel_half_avx2.hpp), decode and prefill alike: F16C widens 8 weights
// per vcvtph2ps, FMA against the fp32 inputs. Rows as stored are multiplied only by the
// scalar and avx512 entries.
#include "kernels/quant/panel_half_avx2.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_f16__avx2 = quant::HalfPanelLinear<quant::WidenF16>::impl("f16_panel16");
}  // namespace headwise::kernels
