// Synthetic models with their weight matrices in a low-bit type, quantized at load
// (`headwise bench --synthetic NAME --weights TYPE`): the same seeded f32 weights as
// Model::synthetic, then each matrix in the type formats/quantize_gguf.hpp chooses for
// it under that mix (choose_tensor_type, by the tensor's GGUF name: the output matrix in
// q6_k under the 4- and 5-bit mixes, q4_k_m's and q5_k_m's q6_k layers, the q8_0/f16
// fallback for rows that are not whole blocks), quantized by the catalogue's quantizers (kernels/quant/).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headwise/model.hpp"

namespace headwise {

// mix: "" (f32, as Model::synthetic) or a formats::valid_weight_mix() name. `types`
// (may be null) gets what the matrices became, e.g. "q4_0 ×84, q6_k ×1".
// The llama-family presets only (their tensors have GGUF names); others are refused.
Status synthetic_model(const std::string& name, uint64_t seed, const std::string& mix,
                       std::shared_ptr<const Model>* out, std::string* types = nullptr);

}  // namespace headwise
