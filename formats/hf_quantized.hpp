// Hugging Face GPTQ and AWQ checkpoints (config.json's quantization_config): their packed
// integer tensors (qweight, qzeros, scales, g_idx) re-encoded at load as GGUF-style blocks
// of 32 that headwise multiplies natively, with the same numbers:
//   zeros at the centre (symmetric GPTQ: every zero 8, or 128 at 8 bits) → Q4_0 / Q8_0
//   other zeros (AWQ, asymmetric GPTQ) → Q4_0C / Q8_0C (kernels/quant/blocks.hpp): the
//     Q4_0/Q8_0 block and one f32 offset, run as Q4_0/Q8_0 plus the offsets' product.
// Formats, for weight (n, k) of an N×K linear layer, group g of input row k:
//   GPTQ (AutoGPTQ / GPTQModel / optimum): qweight int32 [K/f][N] (f = 32/bits values of
//     consecutive k per int32, k % f at bits·(k % f)); qzeros int32 [G][N/f] (n packed the
//     same way); scales f16 [G][N]; g_idx int32 [K] (g of each k; default k / group_size);
//     checkpoint_format "gptq" stores each zero less 1, "gptq_v2" as is.
//   AWQ (AutoAWQ, version "gemm"): qweight int32 [K][N/8], 8 consecutive n per int32 in
//     the order 0, 2, 4, 6, 1, 3, 5, 7 (n = 8c + j in nibble kAwqNibble[j]); qzeros int32
//     [G][N/8] packed the same way; scales f16 [G][N]; g = k / group_size.
//   w(n, k) = scales[g][n] · (q(k, n) − zero[g][n]).
// Supported: 4 and 8 bits (AWQ: 4), groups of a multiple of 32 input rows or one per
// column (group_size −1), and act-order (desc_act) files: where g_idx interleaves the
// groups over the input rows, the columns are stored sorted by group (each group then a
// run of whole blocks) and the view carries that order (TensorView::perm), by which the
// products gather their inputs. Anything else is refused by name.
#pragma once

#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/weights.hpp"
#include "headwise/status.hpp"

namespace headwise::formats {

struct HfQuantConfig {
  enum class Method { none, gptq, awq };
  Method method = Method::none;
  int bits = 0;
  int group_size = -1;        // input rows per group; −1: one group per column
  bool zeros_less_one = false;  // GPTQ checkpoint_format "gptq": stored zero = zero − 1
};

// config.json's quantization_config (`q`, from `path`) → *out; a method, bit width or
// layout headwise cannot run is an `unsupported` Status naming the field.
Status parse_hf_quant_config(const nlohmann::json& q, const std::string& path, HfQuantConfig* out);

// Replaces in `views` every quantized layer's tensors (P.qweight, P.qzeros, P.scales,
// P.g_idx) by one view P.weight [N][K] of blocks (see the top), whose bytes `owned` keeps.
// `budget`: bytes the re-encoded tensors may take in all (the files' size, times 2: a
// well-formed file's layers take at most 1.4× their qweight bytes), so that tensors a
// hostile file points at the same bytes cannot make it allocate without bound.
Status convert_hf_quantized(const HfQuantConfig& cfg, const std::string& dir, uint64_t budget,
                            std::vector<graph::TensorView>* views, std::deque<std::vector<uint8_t>>* owned);

}  // namespace headwise::formats
