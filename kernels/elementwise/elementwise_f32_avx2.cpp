// AVX2+FMA instantiation of the element-wise bodies (compiled with -mavx2 -mfma):
// 8 floats per vector.
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/simd/math_xsimd.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::fma3<xsimd::avx2>>;
static_assert(S::W == 8);
}  // namespace

// The elementwise.inc line's table (constant-initialised: usable before main).
extern const ElemFns elementwise_f32__avx2 = ElemBody<S>::table();

}  // namespace headwise::kernels
