// The avx2 f32 linear kernel of the registry (linear.inc): the blocked GEMV of
// linear_f32_gemv_impl.hpp, for each output block width oneDNN may pick on this ISA.
#include "kernels/simd/simd_xsimd.hpp"
#include "kernels/matmul/linear_f32_gemv_impl.hpp"

namespace headwise::kernels {

extern const LinearKernelImpl linear_f32__avx2 = GemvF32<simd::F32<xsimd::fma3<xsimd::avx2>>, 8, 16, 24, 32, 48, 64>::impl();

}  // namespace headwise::kernels
