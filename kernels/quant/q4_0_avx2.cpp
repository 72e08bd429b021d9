// Q4_0 products on avx2 (vpmaddubsw + vpmaddwd): the linear-registry entry, on the weights
// repacked at load into 8-row panels (interleave_x86.hpp), for decode and prefill
// alike. GGUF rows as stored are multiplied only by the scalar entry (q4_0_scalar.cpp).
#include "kernels/quant/interleave_x86.hpp"

namespace headwise::kernels {
// The linear-registry entry (kernels/matmul/linear.inc).
extern const LinearKernelImpl linear_q4_0__avx2 =
    quant::PanelLinear<quant::PanelQ4_0<quant::MaddAvx2>, quant::WType::q4_0, WeightType::q4_0, false>::impl("q4_0");
}  // namespace headwise::kernels
