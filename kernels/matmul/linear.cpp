// The linear-kernel registry (linear.inc) and the weight-type table (weight_types.inc).
#include "kernels/matmul/linear.hpp"

namespace headwise::kernels {

#define HW_LINEAR_KERNEL(type, isa, symbol) extern const LinearKernelImpl symbol;
#include "kernels/matmul/linear.inc"
#undef HW_LINEAR_KERNEL

namespace {

const LinearKernel kTable[] = {
#define HW_LINEAR_KERNEL(type, isa, symbol) {WeightType::type, Isa::isa, #symbol, &symbol},
#include "kernels/matmul/linear.inc"
#undef HW_LINEAR_KERNEL
};

struct TypeInfo {
  const char* name;
  int block_elems, block_bytes;
};
const TypeInfo kTypes[] = {
#define HW_WEIGHT_TYPE(name, block_elems, block_bytes) {#name, block_elems, block_bytes},
#include "kernels/matmul/weight_types.inc"
#undef HW_WEIGHT_TYPE
};
static_assert(sizeof(kTypes) / sizeof(kTypes[0]) == size_t(WeightType::Count),
              "one weight_types.inc line per WeightType");

}  // namespace

const char* weight_type_name(WeightType t) { return kTypes[int(t)].name; }
int weight_block_elems(WeightType t) { return kTypes[int(t)].block_elems; }
int weight_block_bytes(WeightType t) { return kTypes[int(t)].block_bytes; }

KernelList<LinearKernel> linear_kernels() { return kernel_list(kTable); }

const LinearKernel* linear_kernel(const PackedWeights& w, Isa isa) {
  return select(linear_kernels(), isa,
                [&w](const LinearKernel& k) { return k.type == w.type && k.impl->supports(w); });
}

}  // namespace headwise::kernels
