// scalar instantiations of the small-M blocked GEMV (gemv_impl.hpp), one per output
// block width oneDNN may pick.
#include "kernels/simd/simd_scalar.hpp"
#include "kernels/matmul/gemv_impl.hpp"

namespace headwise::kernels {

GemvFn gemv_f32__scalar(int NB) {
  using S = simd::Scalar;
  switch (NB) {
    case 8: return Gemv<S, 8>::run;
    case 16: return Gemv<S, 16>::run;
    case 24: return Gemv<S, 24>::run;
    case 32: return Gemv<S, 32>::run;
    case 48: return Gemv<S, 48>::run;
    case 64: return Gemv<S, 64>::run;
    default: return nullptr;
  }
}

}  // namespace headwise::kernels
