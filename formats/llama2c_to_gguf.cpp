#include "formats/llama2c_to_gguf.hpp"

#include <map>

#include "formats/gguf_write.hpp"

namespace headwise::formats {

std::string llama_gguf_tensor_name(const std::string& meta) {
  // Meta names → llama.cpp names
  static const std::map<std::string, std::string> names = {
      {"attention_norm.weight", "attn_norm.weight"}, {"ffn_norm.weight", "ffn_norm.weight"},
      {"attention.wq.weight", "attn_q.weight"},      {"attention.wk.weight", "attn_k.weight"},
      {"attention.wv.weight", "attn_v.weight"},      {"attention.wo.weight", "attn_output.weight"},
      {"feed_forward.w1.weight", "ffn_gate.weight"}, {"feed_forward.w2.weight", "ffn_down.weight"},
      {"feed_forward.w3.weight", "ffn_up.weight"}};
  if (meta == "tok_embeddings.weight") return "token_embd.weight";
  if (meta == "norm.weight") return "output_norm.weight";
  if (meta == "output.weight") return "output.weight";
  if (meta.compare(0, 7, "layers.") != 0) return "";
  const size_t dot = meta.find('.', 7);
  auto it = dot == std::string::npos ? names.end() : names.find(meta.substr(dot + 1));
  if (it == names.end()) return "";
  return "blk." + meta.substr(7, dot - 7) + "." + it->second;
}

Status convert_llama2c_to_gguf(const graph::Llama2cCheckpoint& ckpt, const Tokenizer& tok,
                               const std::string& out_path) {
  const graph::Llama2cConfig& c = ckpt.config();
  if (tok.vocab_size() != c.vocab_size)
    return invalid_argument("the tokenizer has " + std::to_string(tok.vocab_size()) + " pieces, the checkpoint " +
                            std::to_string(c.vocab_size));
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("general.name", ckpt.path());
  w.set_u32("llama.context_length", uint32_t(c.seq_len));
  w.set_u32("llama.embedding_length", uint32_t(c.dim));
  w.set_u32("llama.block_count", uint32_t(c.n_layers));
  w.set_u32("llama.feed_forward_length", uint32_t(c.hidden_dim));
  w.set_u32("llama.attention.head_count", uint32_t(c.n_heads));
  w.set_u32("llama.attention.head_count_kv", uint32_t(c.n_kv_heads));
  w.set_u32("llama.rope.dimension_count", uint32_t(c.head_size()));
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("llama.vocab_size", uint32_t(c.vocab_size));
  w.set_u32("general.file_type", 0);  // all F32
  // tokenizer
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int i = 0; i < tok.vocab_size(); ++i) {
    pieces.push_back(tok.piece(i));
    scores.push_back(tok.score(i));
    const std::string& p = tok.piece(i);
    const bool byte = p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>';
    types.push_back(i == 0 ? 2 : i <= 2 ? 3 : byte ? 6 : 1);  // UNKNOWN, CONTROL, BYTE, NORMAL
  }
  w.set_str("tokenizer.ggml.model", "llama");
  w.set_str_array("tokenizer.ggml.tokens", pieces);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  for (const graph::TensorView& t : ckpt.tensors()) {
    const std::string name = llama_gguf_tensor_name(t.name);
    if (name.empty()) return format_error(ckpt.path() + ": unexpected tensor '" + t.name + "'");
    HW_RETURN_IF_ERROR(w.add_f32(name, t.shape, reinterpret_cast<const float*>(t.data)));
  }
  return w.write(out_path);
}

}  // namespace headwise::formats
