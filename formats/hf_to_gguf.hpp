// Hugging Face folder → GGUF file in llama.cpp's conventions (what its
// convert_hf_to_gguf.py writes for these architectures, re-derived from the GGUF
// naming docs): `<arch>.*` hyperparameter keys, blk.N.* tensor names, Llama q/k rows
// permuted so RoPE pairs are adjacent features, GPT-2's Conv1D weights transposed to
// [out][in], Llama 3 rope scaling as the rope_freqs tensor, tokenizer.* metadata copied
// from a vocabulary GGUF. Tensors keep their dtype (F32/F16/BF16).
// Used by the tests (their random-weight models, compared against llama.cpp) and by
// the load-time figures.
#pragma once

#include <string>

#include "formats/gguf.hpp"
#include "headwise/status.hpp"

namespace headwise::formats {

// `vocab` may be null (no tokenizer metadata).
Status convert_hf_to_gguf(const std::string& hf_dir, const GgufFile* vocab, const std::string& out_path);

}  // namespace headwise::formats
