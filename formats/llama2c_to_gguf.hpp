// A llama2.c checkpoint (+ its tokenizer.bin) written as a GGUF file in llama.cpp's
// "llama" conventions, so the trained models in ../shared/models (stories260K) can be
// quantized (`headwise convert --weights`) and run by headwise and llama.cpp alike.
// llama2.c's q/k rows already pair adjacent features for RoPE, as GGUF llama files do,
// so tensors are copied unpermuted. The tokenizer becomes "llama" (SentencePiece)
// metadata: pieces, scores, types (0 <unk>, 1 <s>, 2 </s> control; the 256 "<0xHH>"
// byte pieces BYTE; the rest NORMAL), bos 1, eos 2, unk 0.
#pragma once

#include <string>

#include "graph/weights.hpp"
#include "headwise/status.hpp"
#include "headwise/tokenizer.hpp"

namespace headwise::formats {

// The llama.cpp (GGUF) name of a llama2.c / Meta tensor name ("layers.3.attention.wv.weight"
// → "blk.3.attn_v.weight"), or "" for a name outside that set.
std::string llama_gguf_tensor_name(const std::string& meta_name);

Status convert_llama2c_to_gguf(const graph::Llama2cCheckpoint& ckpt, const Tokenizer& tok,
                               const std::string& out_path);

}  // namespace headwise::formats
