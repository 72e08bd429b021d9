// A GGUF file as a model: llama.cpp's `<arch>.*` keys → ArchConfig, its tensor names
// (token_embd, blk.N.attn_q, ...) → the architecture's description.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <deque>
#include <new>
#include <memory>
#include <vector>

#include "graph/input_file.hpp"
#include "formats/checkpoint.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::formats {
namespace {

// The mapped file, and the tensors re-encoded at load (Q5_0 and IQ4_NL as Q8_0), which
// the weight set keeps alive.
struct GgufWeights {
  std::shared_ptr<const GgufFile> file;
  std::deque<std::vector<uint8_t>> reencoded;
  uint64_t reencoded_bytes = 0;  // the Q5_0, IQ4_NL, Q4_1 and Q5_1 tensors' bytes in the file, so far
};

// Tensors of a well-formed file do not overlap, so the bytes of those re-encoded at load
// (Q5_0 and IQ4_NL here, Q4_1 and Q5_1 when the plan makes their products:
// graph/projection.hpp) fit in the file; their copies (34/22, 34/18, 34/20 and 34/24 of
// them) stay bounded by its size even where a hostile file points many tensors at the
// same bytes.
Status count_reencoded(const GgufFile& f, const GgufTensor& t, GgufWeights* owned) {
  owned->reencoded_bytes += uint64_t(t.nbytes);
  if (owned->reencoded_bytes > f.file_size())
    return format_error(f.path() + ": tensor '" + t.name + "': the Q5_0, IQ4_NL, Q4_1 and Q5_1 tensors' " +
                        std::to_string(owned->reencoded_bytes) + " bytes exceed the file's " +
                        std::to_string(f.file_size()) + " (tensors overlap)");
  return Status::Ok();
}

// Tensor t, stored in blocks of 32 of `block_bytes` that `to_q8_0` re-encodes exactly
// (Q5_0, IQ4_NL: quant.hpp), as a Q8_0 copy owned by `owned`, into v.
Status reencode_as_q8_0(const GgufFile& f, const GgufTensor& t, size_t block_bytes,
                        void (*to_q8_0)(const void*, void*, int64_t), GgufWeights* owned, graph::TensorView* v) {
  namespace q = kernels::quant;
  HW_RETURN_IF_ERROR(count_reencoded(f, t, owned));
  const int64_t blocks = t.nbytes / int64_t(block_bytes);
  try {
    owned->reencoded.emplace_back(size_t(blocks) * sizeof(q::BlockQ8_0));
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::out_of_memory, f.path() + ": tensor '" + t.name + "': no memory for its " +
                                                 std::to_string(blocks * sizeof(q::BlockQ8_0)) + " bytes as Q8_0");
  }
  to_q8_0(t.data, owned->reencoded.back().data(), blocks);
  v->dtype = graph::DType::q8_0;
  v->data = owned->reencoded.back().data();
  v->nbytes = owned->reencoded.back().size();
  return Status::Ok();
}

Status tensor_views(const GgufFile& f, const ArchConfig& c, std::vector<graph::TensorView>* views,
                    GgufWeights* owned) {
  for (const GgufTensor& t : f.tensors()) {
    if (ignorable_tensor(c, Naming::gguf, t.name)) continue;
    graph::TensorView v;
    v.name = t.name;
    v.shape = t.shape();
    v.data = t.data;
    v.nbytes = static_cast<size_t>(t.nbytes);
    if (t.type == kGgmlF32) v.dtype = graph::DType::f32;
    else if (t.type == kGgmlF16) v.dtype = graph::DType::f16;
    else if (t.type == kGgmlBF16) v.dtype = graph::DType::bf16;
    else if (t.type == 8) v.dtype = graph::DType::q8_0;   // ggml Q8_0
    else if (t.type == 2) v.dtype = graph::DType::q4_0;   // ggml Q4_0
    else if (t.type == 10) v.dtype = graph::DType::q2_k;  // ggml Q2_K
    else if (t.type == 11) v.dtype = graph::DType::q3_k;  // ggml Q3_K
    else if (t.type == 12) v.dtype = graph::DType::q4_k;  // ggml Q4_K
    else if (t.type == 13) v.dtype = graph::DType::q5_k;  // ggml Q5_K
    else if (t.type == 14) v.dtype = graph::DType::q6_k;  // ggml Q6_K
    else if (t.type == 23) v.dtype = graph::DType::iq4_xs;  // ggml IQ4_XS
    else if (t.type == 6)  // ggml Q5_0, as Q8_0
      HW_RETURN_IF_ERROR(reencode_as_q8_0(f, t, sizeof(kernels::quant::BlockQ5_0), kernels::quant::q5_0_to_q8_0, owned, &v));
    else if (t.type == 20)  // ggml IQ4_NL, as Q8_0
      HW_RETURN_IF_ERROR(
          reencode_as_q8_0(f, t, sizeof(kernels::quant::BlockIQ4_NL), kernels::quant::iq4_nl_to_q8_0, owned, &v));
    else if (t.type == 3 || t.type == 7) {  // ggml Q4_1, Q5_1 (products: Q8_0 + offsets)
      HW_RETURN_IF_ERROR(count_reencoded(f, t, owned));
      v.dtype = t.type == 3 ? graph::DType::q4_1 : graph::DType::q5_1;
    }
    else
      return unsupported(f.path() + ": tensor '" + t.name + "' has type " + t.type_name() +
                         ", which headwise cannot compute with yet (F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K "
                         "and IQ4_XS are supported, and Q5_0, IQ4_NL, Q4_1 and Q5_1 through Q8_0)");
    views->push_back(std::move(v));
  }
  return Status::Ok();
}

}  // namespace

bool is_gguf(const std::string& path) {
  // Only a regular file can be one (and opening a FIFO with fopen would block).
  int fd = -1;
  uint64_t size = 0;
  if (!graph::open_input_file(path, "model file", &fd, &size).ok()) return false;
  std::FILE* f = fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    return false;
  }
  char magic[4] = {};
  const bool ok = std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  std::fclose(f);
  return ok;
}

Status load_gguf_checkpoint(const std::string& path, Checkpoint* out) {
  std::unique_ptr<GgufFile> file;
  HW_RETURN_IF_ERROR(GgufFile::open(path, &file));
  std::shared_ptr<const GgufFile> f(std::move(file));
  ArchConfig c;
  HW_RETURN_IF_ERROR(f->get_str("general.architecture", &c.arch));
  if (c.arch != "llama" && c.arch != "qwen2" && c.arch != "qwen3" && c.arch != "gpt2")
    return unsupported(path + ": architecture '" + c.arch + "' (general.architecture) is not supported (supported: " +
                       supported_list() + ")");
  const std::string a = c.arch + ".";
  graph::Settings& s = c.settings;
  uint32_t ctx = 0, d = 0, layers = 0, ff = 0, heads = 0;
  HW_RETURN_IF_ERROR(f->get_u32(a + "context_length", &ctx));
  HW_RETURN_IF_ERROR(f->get_u32(a + "embedding_length", &d));
  HW_RETURN_IF_ERROR(f->get_u32(a + "block_count", &layers));
  HW_RETURN_IF_ERROR(f->get_u32(a + "feed_forward_length", &ff));
  HW_RETURN_IF_ERROR(f->get_u32(a + "attention.head_count", &heads));
  uint32_t kv_heads = heads;
  HW_RETURN_IF_ERROR(f->opt_u32(a + "attention.head_count_kv", &kv_heads));
  auto positive = [&](const char* key, uint32_t v, uint32_t max) -> Status {
    if (v == 0 || v > max)
      return format_error(path + ": key '" + a + key + "' is " + std::to_string(v) + " (1.." + std::to_string(max) + " allowed)");
    return Status::Ok();
  };
  HW_RETURN_IF_ERROR(positive("context_length", ctx, 1u << 24));
  HW_RETURN_IF_ERROR(positive("embedding_length", d, 1u << 20));
  HW_RETURN_IF_ERROR(positive("block_count", layers, 4096));
  HW_RETURN_IF_ERROR(positive("feed_forward_length", ff, 1u << 22));
  HW_RETURN_IF_ERROR(positive("attention.head_count", heads, 4096));
  HW_RETURN_IF_ERROR(positive("attention.head_count_kv", kv_heads, 4096));
  if (heads % kv_heads != 0)
    return format_error(path + ": attention.head_count " + std::to_string(heads) +
                        " is not a multiple of attention.head_count_kv " + std::to_string(kv_heads));
  uint32_t head_dim = d % heads == 0 ? d / heads : 0;
  HW_RETURN_IF_ERROR(f->opt_u32(a + "attention.key_length", &head_dim));
  uint32_t v_dim = head_dim;
  HW_RETURN_IF_ERROR(f->opt_u32(a + "attention.value_length", &v_dim));
  if (head_dim == 0 || head_dim > 256 || v_dim != head_dim)
    return unsupported(path + ": head size " + std::to_string(head_dim) + " (key) / " + std::to_string(v_dim) +
                       " (value): headwise needs equal key and value sizes in 1..256");
  s.max_seq_len = static_cast<int>(ctx);
  s.d_model = static_cast<int>(d);
  s.n_layers = static_cast<int>(layers);
  s.n_heads = static_cast<int>(heads);
  s.n_kv_heads = static_cast<int>(kv_heads);
  s.head_dim = static_cast<int>(head_dim);
  c.ffn_hidden = static_cast<int>(ff);

  if (c.arch == "gpt2") {
    HW_RETURN_IF_ERROR(f->get_f32(a + "attention.layer_norm_epsilon", &s.norm_eps));
  } else {
    HW_RETURN_IF_ERROR(f->get_f32(a + "attention.layer_norm_rms_epsilon", &s.norm_eps));
    s.rope_theta = 10000.0f;
    HW_RETURN_IF_ERROR(f->opt_f32(a + "rope.freq_base", &s.rope_theta));
    uint32_t rot = head_dim;
    HW_RETURN_IF_ERROR(f->opt_u32(a + "rope.dimension_count", &rot));
    if (rot != head_dim)
      return unsupported(path + ": key '" + a + "rope.dimension_count' is " + std::to_string(rot) +
                         ": partial rotary embeddings (fewer than head size " + std::to_string(head_dim) +
                         ") are not supported");
    std::string scaling = "none";
    HW_RETURN_IF_ERROR(f->opt_str(a + "rope.scaling.type", &scaling));
    if (scaling != "none")
      return unsupported(path + ": key '" + a + "rope.scaling.type' is '" + scaling +
                         "'; only 'none' (and Llama 3's rope_freqs tensor) is supported");
    // llama.cpp's converter permutes Llama's q/k rows so that rotated pairs are
    // adjacent features; Qwen files keep the NeoX (half-split) order.
    s.rope_style = c.arch == "llama" ? kernels::RopeStyle::interleaved : kernels::RopeStyle::half;
    if (const GgufTensor* rf = f->find_tensor("rope_freqs.weight")) {
      if (rf->type != kGgmlF32 || rf->numel() != head_dim / 2)
        return format_error(path + ": tensor 'rope_freqs.weight' must be F32 [" + std::to_string(head_dim / 2) +
                            "], is " + rf->type_name() + " with " + std::to_string(rf->numel()) + " elements");
      s.rope_freq_factors.resize(head_dim / 2);
      std::memcpy(s.rope_freq_factors.data(), rf->data, head_dim / 2 * sizeof(float));
      for (float x : s.rope_freq_factors)
        if (!(x > 0)) return format_error(path + ": tensor 'rope_freqs.weight' holds a factor that is not > 0");
    }
  }
  const GgufTensor* emb = f->find_tensor("token_embd.weight");
  if (!emb) return format_error(path + ": tensor 'token_embd.weight' (the token embedding) is missing");
  if (emb->ne.size() != 2 || emb->ne[1] <= 0 || emb->ne[1] > (1 << 24))
    return format_error(path + ": tensor 'token_embd.weight' has an unusable shape");
  s.vocab_size = static_cast<int>(emb->ne[1]);
  c.tied = f->find_tensor("output.weight") == nullptr;

  Checkpoint& ck = *out;
  ck.config = c;
  HW_RETURN_IF_ERROR(describe(c, Naming::gguf, path, &ck.desc));
  ck.desc.name = path.substr(path.find_last_of('/') + 1);
  std::string name;
  HW_RETURN_IF_ERROR(f->opt_str("general.name", &name));
  if (!name.empty()) ck.desc.name = name;
  std::vector<graph::TensorView> views;
  auto owned = std::make_shared<GgufWeights>();
  owned->file = f;
  HW_RETURN_IF_ERROR(tensor_views(*f, c, &views, owned.get()));
  ck.weights = graph::WeightSet::external(std::move(views), std::move(owned), path);
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    uint32_t id = 0;
    if (!f->has(key)) continue;
    HW_RETURN_IF_ERROR(f->get_u32(key, &id));
    if (static_cast<int64_t>(id) < s.vocab_size) {
      bool seen = false;
      for (int32_t e : ck.eos_ids) seen |= e == static_cast<int32_t>(id);
      if (!seen) ck.eos_ids.push_back(static_cast<int32_t>(id));
    }
  }
  ck.gguf = f;
  return Status::Ok();
}

}  // namespace headwise::formats
