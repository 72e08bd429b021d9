// AVX2+FMA instantiation of the element-wise bodies (compiled with -mavx2 -mfma):
// 8 floats per vector.
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/simd/math_xsimd.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::fma3<xsimd::avx2>>;
static_assert(S::W == 8);
constexpr ElemKernels kKernels = ElemBody<S>::table();
}  // namespace

const ElemKernels& elementwise_f32__avx2() { return kKernels; }

}  // namespace headwise::kernels
