// Tokenizers from model files: a GGUF file's tokenizer.ggml.* metadata, or a Hugging
// Face tokenizer.json (with the tokenizer_config.json beside it when present: bos/eos,
// add_bos_token/add_eos_token, chat_template; and generation_config.json's eos ids).
// Errors are Statuses naming the file and the field at fault; an unknown model type,
// pre-tokenizer, normalizer, decoder or post-processor is refused by name.
#pragma once

#include <memory>
#include <string>

#include "headwise/status.hpp"
#include "headwise/tokenizer.hpp"

namespace headwise {
namespace formats {
class GgufFile;
}

Status tokenizer_from_gguf(const formats::GgufFile& gguf, std::unique_ptr<Tokenizer>* out);
Status tokenizer_from_hf(const std::string& tokenizer_json_path, std::unique_ptr<Tokenizer>* out);
// The same from tokenizer.json text already in memory (fuzzing, tests); `label` names it
// in errors and no tokenizer_config.json is read.
Status tokenizer_from_hf_json(const std::string& json_text, const std::string& label,
                              std::unique_ptr<Tokenizer>* out);

namespace tok {
// Token texts that end a turn in the chat vocabularies headwise knows (Llama 3, Qwen,
// Phi-3, Gemma, ...): added to eos_ids() when they are special tokens of a vocabulary.
bool is_end_of_turn_text(const std::string& s);
}  // namespace tok

}  // namespace headwise
