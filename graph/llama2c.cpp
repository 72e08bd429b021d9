// Llama2cCheckpoint::open: a llama2.c "version 0" checkpoint (../shared/models/README.md)
// mapped and cut into named f32 views, like llama2.c's memory_map_weights but with the
// header checked first and the file size required to match it exactly, so a
// truncated or oversized file is a Status instead of a read past the mapping.
#include <cstdlib>
#include <cstring>

#include "graph/weights.hpp"

namespace headwise::graph {
namespace {

constexpr uint64_t kHeaderBytes = 7 * sizeof(int32_t);

// Byte counts computed from untrusted header fields; any overflow is sticky.
struct Size {
  uint64_t v = 0;
  bool overflow = false;
};
Size mul(Size a, uint64_t b) {
  a.overflow |= __builtin_mul_overflow(a.v, b, &a.v);
  return a;
}
Size operator+(Size a, Size b) {
  a.overflow |= b.overflow | __builtin_add_overflow(a.v, b.v, &a.v);
  return a;
}
Size floats(uint64_t a, uint64_t b = 1, uint64_t c = 1) {
  return mul(mul(mul(Size{sizeof(float)}, a), b), c);
}

std::string header_str(const Llama2cConfig& c) {
  return "dim=" + std::to_string(c.dim) + " hidden_dim=" + std::to_string(c.hidden_dim) +
         " n_layers=" + std::to_string(c.n_layers) + " n_heads=" + std::to_string(c.n_heads) +
         " n_kv_heads=" + std::to_string(c.n_kv_heads) +
         " vocab_size=" + (c.shared_classifier ? "" : "-") + std::to_string(c.vocab_size) +
         " seq_len=" + std::to_string(c.seq_len);
}

Status check_config(const std::string& path, const int32_t raw[7], Llama2cConfig* c) {
  static const char* const kField[7] = {"dim",        "hidden_dim", "n_layers", "n_heads",
                                        "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i) {
    // vocab_size carries the sign of "shared classifier"; INT32_MIN has no magnitude.
    const bool bad = i == 5 ? (raw[i] == 0 || raw[i] == INT32_MIN) : raw[i] <= 0;
    if (bad)
      return format_error(path + ": header field " + kField[i] + " = " + std::to_string(raw[i]) +
                          (i == 5 ? " must be non-zero" : " must be positive"));
  }
  c->dim = raw[0];
  c->hidden_dim = raw[1];
  c->n_layers = raw[2];
  c->n_heads = raw[3];
  c->n_kv_heads = raw[4];
  c->vocab_size = std::abs(raw[5]);
  c->shared_classifier = raw[5] > 0;
  c->seq_len = raw[6];
  if (c->dim % c->n_heads != 0)
    return format_error(path + ": header field dim = " + std::to_string(c->dim) +
                        " is not a multiple of n_heads = " + std::to_string(c->n_heads));
  if (c->n_heads % c->n_kv_heads != 0)
    return format_error(path + ": header field n_heads = " + std::to_string(c->n_heads) +
                        " is not a multiple of n_kv_heads = " + std::to_string(c->n_kv_heads));
  return Status::Ok();
}

}  // namespace

Status Llama2cCheckpoint::open(const std::string& path, std::unique_ptr<Llama2cCheckpoint>* out) {
  if (out == nullptr) return invalid_argument("Llama2cCheckpoint::open(" + path + "): out is null");
  out->reset();
  std::unique_ptr<Llama2cCheckpoint> ck(new Llama2cCheckpoint());
  HW_RETURN_IF_ERROR(MappedFile::open(path, &ck->file_));
  const uint64_t actual = ck->file_->size();
  if (actual < kHeaderBytes)
    return format_error(path + ": " + std::to_string(actual) + " bytes, shorter than the " +
                        std::to_string(kHeaderBytes) + "-byte header");
  int32_t raw[7];
  std::memcpy(raw, ck->file_->data(), sizeof raw);  // little-endian, as is every x86 host
  Llama2cConfig& c = ck->config_;
  HW_RETURN_IF_ERROR(check_config(path, raw, &c));

  const uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers,
                 vocab = c.vocab_size, kv_dim = uint64_t(c.kv_dim());
  // The legacy RoPE tables (freq_cis_real, freq_cis_imag) are skipped, not exposed;
  // llama2.c sizes each as seq_len * head_size / 2 with integer division.
  const uint64_t rope_floats = uint64_t(c.seq_len) * uint64_t(c.head_size()) / 2;
  const Size expected = Size{kHeaderBytes} + floats(vocab, dim) + floats(layers, dim) +
                        floats(layers, dim, dim) + floats(layers, kv_dim, dim) +
                        floats(layers, kv_dim, dim) + floats(layers, dim, dim) +
                        floats(layers, dim) + floats(layers, hidden, dim) +
                        floats(layers, dim, hidden) + floats(layers, hidden, dim) + floats(dim) +
                        floats(2 * rope_floats) +
                        (c.shared_classifier ? Size{} : floats(vocab, dim));
  if (expected.overflow)
    return format_error(path + ": header (" + header_str(c) +
                        ") implies a file larger than 2^64 bytes; actual size " +
                        std::to_string(actual) + " bytes");
  if (expected.v != actual)
    return format_error(path + ": file is " + std::to_string(actual) + " bytes but its header (" +
                        header_str(c) + ") implies " + std::to_string(expected.v) + " bytes (" +
                        (actual < expected.v ? "truncated" : "trailing data") + ")");

  // Walk the file in order, as memory_map_weights does. The size check above makes
  // every view land inside the mapping.
  const uint8_t* p = ck->file_->data() + kHeaderBytes;
  auto take = [&](std::string name, std::vector<int64_t> shape) {
    TensorView t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.data = p;
    t.nbytes = size_t(t.numel()) * sizeof(float);
    p += t.nbytes;
    ck->tensors_.push_back(std::move(t));
  };
  // One [layers][...] array per weight kind: layer l's slice is its own tensor.
  auto per_layer = [&](const char* kind, std::vector<int64_t> shape) {
    for (int l = 0; l < c.n_layers; ++l) take("layers." + std::to_string(l) + "." + kind, shape);
  };
  const int64_t D = c.dim, H = c.hidden_dim, KV = c.kv_dim(), V = c.vocab_size;
  take("tok_embeddings.weight", {V, D});
  per_layer("attention_norm.weight", {D});
  per_layer("attention.wq.weight", {D, D});
  per_layer("attention.wk.weight", {KV, D});
  per_layer("attention.wv.weight", {KV, D});
  per_layer("attention.wo.weight", {D, D});
  per_layer("ffn_norm.weight", {D});
  per_layer("feed_forward.w1.weight", {H, D});
  per_layer("feed_forward.w2.weight", {D, H});
  per_layer("feed_forward.w3.weight", {H, D});
  take("norm.weight", {D});
  p += 2 * rope_floats * sizeof(float);
  if (!c.shared_classifier) take("output.weight", {V, D});

  *out = std::move(ck);
  return Status::Ok();
}

const TensorView* Llama2cCheckpoint::find(const std::string& name) const {
  // A checkpoint holds 2 + 9·layers (+1) tensors: a linear scan is cheap enough.
  for (const TensorView& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace headwise::graph
