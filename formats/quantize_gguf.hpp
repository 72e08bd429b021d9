// A GGUF model re-written with its weight matrices in a low-bit type (`headwise convert
// --weights`), in llama.cpp's conventions so llama.cpp runs the same file.
//
// Which type each tensor gets (choose_tensor_type):
//   - 1-D tensors (norms, biases) and rope_freqs stay as they are (F32): they are tiny
//     and the activations and norms stay fp32.
//   - 2-D matrices get the mix's type: bf16, f16, q8_0, q4_0, q3_k, q4_k, q5_k, q6_k,
//     iq4_xs; for q2_k ("Q2_K") Q2_K, with attn_v in Q4_K where 4 or more query heads
//     share a key head (Q3_K elsewhere), ffn_down and attn_output in Q3_K; for q4_k_m ("Q4_K_M" as llama.cpp names it) Q4_K, with more bits where
//     quantization hurts most: Q6_K for attn_v and ffn_down in the first and last eighth
//     of the layers and every third layer between (half of them), and for the output
//     matrix; a fused attn_qkv (GPT-2) gets Q5_K in every layer. q5_k_m ("Q5_K_M") is the
//     same with Q5_K in place of Q4_K (and Q6_K for attn_qkv): llama.cpp's rules for
//     both. q3_k_m ("Q3_K_M"): Q3_K, with attn_v in Q5_K in the first two layers and Q4_K
//     after, ffn_down in Q5_K in the first sixteenth of the layers and Q4_K after,
//     attn_output and attn_qkv in Q4_K (llama.cpp's rules for a non-Falcon model without
//     experts). iq4_xs ("IQ4_XS"): IQ4_XS, with attn_v in Q5_K where 4 or more query heads
//     share a key head and ffn_down in Q5_K in the first eighth of the layers (llama.cpp's
//     rules without an importance matrix).
//   - the token embedding gets the mix's type (Q4_K for q4_k_m, Q5_K for q5_k_m, Q3_K for
//     q3_k_m, IQ4_XS for iq4_xs, Q2_K for q2_k): it is only read one row per token; headwise dequantizes
//     it once at load for the lookup.
//   - the output matrix gets Q6_K under the 2- to 5-bit mixes (q4_0, q2_k, q3_k, q3_k_m,
//     q4_k, q4_k_m, q5_k, q5_k_m, iq4_xs; llama.cpp does the same for its K-quant and
//     IQ4 mixes): the logits are the most sensitive product; the mix's type otherwise.
//   - rows whose length (ne[0]) is not a multiple of the type's block fall back: K-quants
//     and IQ4_XS (block 256) to Q8_0 when the length is a multiple of 32 (Q2_K, Q3_K to Q4_0,
//     as llama.cpp's), and anything else to F16 (llama.cpp also falls back, to its
//     Q5_0/Q5_1/IQ4_NL/Q8_0/F16 family: headwise reads those but does not write them, so
//     Q8_0 keeps at least the bits).
// Source tensors may be F32, F16, BF16 or any catalogue type (dequantized first).
#pragma once

#include <string>
#include <vector>

#include "formats/gguf.hpp"
#include "headwise/status.hpp"

namespace headwise::formats {

// "bf16" | "f16" | "q8_0" | "q4_0" | "q3_k" | "q4_k" | "q5_k" | "q6_k" | "q3_k_m" |
// "q4_k_m" | "q5_k_m" | "iq4_xs" | "q2_k" (case-insensitive).
bool valid_weight_mix(const std::string& mix);
const char* weight_mixes_help();  // "bf16|f16|q8_0|q4_0|q2_k|q3_k|…|iq4_xs"

// The ggml type of tensor `name` (GGUF naming: blk.N.attn_v.weight, output.weight, ...)
// with dimensions `ne` under `mix`, in a model of n_layers layers whose n_gqa query heads
// share each key head; `why` (may be null) gets a note when it is not the mix's plain
// type ("fallback: 172 % 256").
uint32_t choose_tensor_type(const std::string& mix, const std::string& name,
                            const std::vector<int64_t>& ne, int n_layers, std::string* why, int n_gqa = 1);

struct QuantizeReport {
  struct Line {
    std::string name, from, to, why;
  };
  std::vector<Line> tensors;
  uint64_t bytes_in = 0, bytes_out = 0;
};

// Reads `in`, writes `out` with every metadata key copied (plus general.file_type and
// general.quantization_version) and the tensors quantized as chosen above, using
// `threads` OpenMP threads (0: the default).
Status quantize_gguf(const GgufFile& in, const std::string& mix, const std::string& out,
                     int threads, QuantizeReport* report);

}  // namespace headwise::formats
