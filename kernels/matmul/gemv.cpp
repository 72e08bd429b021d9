// Picks the small-M GEMV of an ISA (gemv_f32_<isa>.cpp).
#include "kernels/matmul/gemv.hpp"

namespace headwise::kernels {

GemvFn gemv_f32__avx512(int NB);
GemvFn gemv_f32__avx2(int NB);
GemvFn gemv_f32__scalar(int NB);

GemvFn gemv_kernel(Isa isa, int NB) {
  switch (isa) {
    case Isa::avx512: return gemv_f32__avx512(NB);
    case Isa::avx2: return gemv_f32__avx2(NB);
    case Isa::scalar: return gemv_f32__scalar(NB);
  }
  return nullptr;
}

}  // namespace headwise::kernels
