// Checkpoints people download, turned into a model description plus its weights:
//   - a GGUF file (llama.cpp's naming; every tensor used in place from the mapping in
//     its stored type — F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
//     IQ4_XS —
//     except Q5_0 and IQ4_NL, re-encoded exactly as Q8_0 at load, and Q4_1 and Q5_1,
//     as Q8_0 plus an offset a block; any other type refused naming the tensor and its
//     type);
//   - a Hugging Face folder: config.json + model.safetensors, or shards listed in
//     model.safetensors.index.json; generation_config.json's defaults when present;
//     GPTQ/AWQ layers (config.json's quantization_config) re-encoded at load as blocks
//     of the same numbers (formats/hf_quantized.hpp).
// The architecture comes from general.architecture / config.json's model_type; the
// description from formats/architectures.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/architectures.hpp"
#include "formats/gguf.hpp"
#include "graph/graph.hpp"
#include "headwise/status.hpp"

namespace headwise::formats {

struct Checkpoint {
  ArchConfig config;
  graph::ModelDesc desc;
  std::unique_ptr<graph::WeightSet> weights;
  // End-of-generation ids (GGUF: eos/eot/eom ids; HF: generation_config.json's, else
  // config.json's eos_token_id) and sampling defaults (< 0: not given).
  std::vector<int32_t> eos_ids;
  float temperature = -1, top_p = -1;
  std::shared_ptr<const GgufFile> gguf;  // GGUF: the file, for its tokenizer metadata
  std::string tokenizer_json;            // HF: the folder's tokenizer.json, when present
};

// True when the file starts with the GGUF magic.
bool is_gguf(const std::string& path);
// True when `dir` holds a config.json.
bool is_hf_folder(const std::string& dir);

Status load_gguf_checkpoint(const std::string& path, Checkpoint* out);
Status load_hf_checkpoint(const std::string& dir, Checkpoint* out);

}  // namespace headwise::formats
