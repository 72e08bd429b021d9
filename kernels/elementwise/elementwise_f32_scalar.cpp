// Portable instantiation of the element-wise bodies (vector width 1, no AVX). This is the
// path that HEADWISE_ISA=scalar forces, and the last one the dispatch falls back to. Its
// activations are evaluated in double (math_scalar.hpp).
#include "kernels/simd/simd_scalar.hpp"
#include "kernels/simd/math_scalar.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"

namespace headwise::kernels {
namespace {
}  // namespace

// The elementwise.inc line's table (constant-initialised: usable before main).
extern const ElemFns elementwise_f32__scalar = ElemBody<simd::Scalar>::table();

}  // namespace headwise::kernels
