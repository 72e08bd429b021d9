#include "formats/hf_to_gguf.hpp"

#include <cstring>
#include <deque>
#include <vector>

#include "formats/checkpoint.hpp"
#include "formats/gguf_write.hpp"

namespace headwise::formats {
namespace {

uint32_t ggml_type_of(graph::DType t) {
  switch (t) {
    case graph::DType::f32: return kGgmlF32;
    case graph::DType::f16: return kGgmlF16;
    case graph::DType::bf16: return kGgmlBF16;
    // the block types come only from GGUF files (never from a Hugging Face folder)
    case graph::DType::q8_0: return 8;
    case graph::DType::q4_0: return 2;
    case graph::DType::q4_k: return 12;
    case graph::DType::q5_k: return 13;
    case graph::DType::q6_k: return 14;
    case graph::DType::q4_1: return 3;
    case graph::DType::q5_1: return 7;
    case graph::DType::q3_k: return 11;
    case graph::DType::iq4_xs: return 23;
    case graph::DType::q2_k: return 10;
    case graph::DType::q4_0c: case graph::DType::q8_0c: break;  // no GGUF type: written as F32
    case graph::DType::i32: return 26;  // ggml I32
  }
  return kGgmlF32;
}

// HF rows of one projection (n_heads heads of head_dim rows, pairs (j, j + hd/2))
// reordered so pair j is rows (2j, 2j+1): llama.cpp's permute() for Llama q/k.
std::vector<uint8_t> permute_rows(const graph::TensorView& t, int n_heads) {
  const int64_t rows = t.shape[0];
  const int64_t cols = t.shape.size() > 1 ? t.shape[1] : 1;
  const size_t row_bytes = graph::dtype_row_bytes(t.dtype, cols);  // block types too (GPTQ's Q4_0)
  const int64_t hd = rows / n_heads;
  std::vector<uint8_t> out(t.nbytes);
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t j = 0; j < hd / 2; ++j)
      for (int64_t s = 0; s < 2; ++s)
        std::memcpy(out.data() + (h * hd + 2 * j + s) * row_bytes, t.data + (h * hd + s * hd / 2 + j) * row_bytes,
                    row_bytes);
  return out;
}

std::vector<uint8_t> transpose(const graph::TensorView& t) {
  const int64_t r = t.shape[0], c = t.shape[1];
  const size_t e = graph::dtype_size(t.dtype);
  std::vector<uint8_t> out(t.nbytes);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) std::memcpy(out.data() + (j * r + i) * e, t.data + (i * c + j) * e, e);
  return out;
}

// HF tensor name → llama.cpp's, or "" for none.
std::string gguf_name(const ArchConfig& c, const std::string& n) {
  const std::string P = c.hf_prefix;
  auto strip = [&](const std::string& prefix, std::string* rest) {
    if (n.compare(0, prefix.size(), prefix) != 0) return false;
    *rest = n.substr(prefix.size());
    return true;
  };
  std::string rest;
  if (c.arch == "gpt2") {
    if (n == P + "wte.weight") return "token_embd.weight";
    if (n == P + "wpe.weight") return "position_embd.weight";
    if (n == P + "ln_f.weight") return "output_norm.weight";
    if (n == P + "ln_f.bias") return "output_norm.bias";
    if (n == "lm_head.weight") return "output.weight";
    if (!strip(P + "h.", &rest)) return "";
    const size_t dot = rest.find('.');
    const std::string layer = rest.substr(0, dot), part = rest.substr(dot + 1);
    static const std::pair<const char*, const char*> kMap[] = {
        {"ln_1.", "attn_norm."}, {"attn.c_attn.", "attn_qkv."}, {"attn.c_proj.", "attn_output."},
        {"ln_2.", "ffn_norm."},  {"mlp.c_fc.", "ffn_up."},      {"mlp.c_proj.", "ffn_down."}};
    for (auto [hf, gg] : kMap)
      if (part.compare(0, strlen(hf), hf) == 0) return "blk." + layer + "." + gg + part.substr(strlen(hf));
    return "";
  }
  if (n == "model.embed_tokens.weight") return "token_embd.weight";
  if (n == "model.norm.weight") return "output_norm.weight";
  if (n == "lm_head.weight") return "output.weight";
  if (!strip("model.layers.", &rest)) return "";
  const size_t dot = rest.find('.');
  const std::string layer = rest.substr(0, dot), part = rest.substr(dot + 1);
  static const std::pair<const char*, const char*> kMap[] = {
      {"input_layernorm.", "attn_norm."},     {"self_attn.q_proj.", "attn_q."},
      {"self_attn.k_proj.", "attn_k."},       {"self_attn.v_proj.", "attn_v."},
      {"self_attn.o_proj.", "attn_output."},  {"self_attn.q_norm.", "attn_q_norm."},
      {"self_attn.k_norm.", "attn_k_norm."},  {"post_attention_layernorm.", "ffn_norm."},
      {"mlp.gate_proj.", "ffn_gate."},        {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."}};
  for (auto [hf, gg] : kMap)
    if (part.compare(0, strlen(hf), hf) == 0) return "blk." + layer + "." + gg + part.substr(strlen(hf));
  return "";
}

}  // namespace

Status convert_hf_to_gguf(const std::string& hf_dir, const GgufFile* vocab, const std::string& out_path) {
  Checkpoint ck;
  HW_RETURN_IF_ERROR(load_hf_checkpoint(hf_dir, &ck));
  const ArchConfig& c = ck.config;
  const graph::Settings& s = c.settings;
  const std::string arch = c.arch == "mistral" ? "llama" : c.arch;
  const std::string a = arch + ".";
  GgufWriter w;
  w.set_str("general.architecture", arch);
  w.set_str("general.name", ck.desc.name);
  w.set_u32(a + "context_length", static_cast<uint32_t>(s.max_seq_len));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(s.d_model));
  w.set_u32(a + "block_count", static_cast<uint32_t>(s.n_layers));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(c.ffn_hidden));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  if (arch == "gpt2") {
    w.set_f32(a + "attention.layer_norm_epsilon", s.norm_eps);
  } else {
    w.set_f32(a + "attention.layer_norm_rms_epsilon", s.norm_eps);
    w.set_f32(a + "rope.freq_base", s.rope_theta);
    w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(s.head_dim));
    w.set_u32(a + "attention.key_length", static_cast<uint32_t>(s.head_dim));
    w.set_u32(a + "attention.value_length", static_cast<uint32_t>(s.head_dim));
  }
  w.set_u32(a + "vocab_size", static_cast<uint32_t>(s.vocab_size));
  if (vocab)
    for (const auto& [key, value] : vocab->metadata())
      if (key.compare(0, 10, "tokenizer.") == 0) w.set_value(key, value);
  if (!ck.eos_ids.empty() && !(vocab && vocab->has("tokenizer.ggml.eos_token_id")))
    w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(ck.eos_ids[0]));

  std::deque<std::vector<uint8_t>> owned;  // rewritten tensors, alive until write()
  if (!s.rope_freq_factors.empty()) {
    owned.emplace_back(s.rope_freq_factors.size() * sizeof(float));
    std::memcpy(owned.back().data(), s.rope_freq_factors.data(), owned.back().size());
    HW_RETURN_IF_ERROR(w.add_tensor("rope_freqs.weight", kGgmlF32, {int64_t(s.rope_freq_factors.size())},
                                    owned.back().data(), owned.back().size()));
  }
  for (const graph::TensorView& src : ck.weights->tensors()) {
    graph::TensorView t = src;
    if (t.dtype == graph::DType::q4_0c || t.dtype == graph::DType::q8_0c || t.perm) {
      // GPTQ/AWQ weights with zero points (formats/hf_quantized.hpp) have no GGUF type,
      // nor do columns stored permuted (act-order): written as their exact values in F32,
      // columns in order (convert --weights TYPE quantizes them again).
      std::vector<float> v(size_t(t.numel()));
      graph::to_f32(t.dtype, t.data, v.size(), v.data());
      owned.emplace_back(v.size() * sizeof(float));
      auto* out = reinterpret_cast<float*>(owned.back().data());
      const int64_t K = t.shape.back(), rows = t.numel() / K;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < K; ++j) out[r * K + (t.perm ? t.perm[j] : j)] = v[size_t(r * K + j)];
      t.perm = nullptr;
      t.dtype = graph::DType::f32;
      t.data = owned.back().data();
      t.nbytes = owned.back().size();
    }
    const std::string name = gguf_name(c, t.name);
    if (name.empty()) return unsupported(hf_dir + ": tensor '" + t.name + "' has no GGUF counterpart");
    const uint8_t* data = t.data;
    std::vector<int64_t> shape = t.shape;
    const bool llama_rope = arch == "llama";
    auto ends = [&](const char* suf) { return name.size() >= strlen(suf) && name.compare(name.size() - strlen(suf), strlen(suf), suf) == 0; };
    if (llama_rope && (ends("attn_q.weight") || ends("attn_q.bias"))) {
      owned.push_back(permute_rows(t, s.n_heads));
      data = owned.back().data();
    } else if (llama_rope && (ends("attn_k.weight") || ends("attn_k.bias"))) {
      owned.push_back(permute_rows(t, s.n_kv_heads));
      data = owned.back().data();
    } else if (arch == "gpt2" && shape.size() == 2 && name != "token_embd.weight" && name != "position_embd.weight" &&
               name != "output.weight") {
      owned.push_back(transpose(t));  // Conv1D [in][out] → [out][in]
      data = owned.back().data();
      shape = {shape[1], shape[0]};
    }
    HW_RETURN_IF_ERROR(w.add_tensor(name, ggml_type_of(t.dtype), std::vector<int64_t>(shape.rbegin(), shape.rend()),
                                    data, t.nbytes));
  }
  return w.write(out_path);
}

}  // namespace headwise::formats
