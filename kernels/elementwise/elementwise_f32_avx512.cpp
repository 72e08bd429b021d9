// AVX-512 instantiation of the element-wise bodies (compiled with -mavx512f/bw/dq/vl):
// 16 floats per vector.
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/simd/math_xsimd.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"

namespace headwise::kernels {
namespace {
using S = simd::F32<xsimd::avx512bw>;
static_assert(S::W == 16);
}  // namespace

// The elementwise.inc line's table (constant-initialised: usable before main).
extern const ElemFns elementwise_f32__avx512 = ElemBody<S>::table();

}  // namespace headwise::kernels
