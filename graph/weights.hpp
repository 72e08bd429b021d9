// Weights on disk: memory-mapped files, safetensors (read and write) and llama2.c
// checkpoints. Loading validates everything it reads; a bad file gives a Status whose
// message names the file and the tensor or field at fault, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "headwise/status.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::graph {

// f32, f16, bf16: one value per element. The block types (GGUF's Q8_0, Q4_0, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS; layouts in kernels/quant/blocks.hpp) store rows of blocks: they come only from
// GGUF files, and linear layers multiply them as stored (kernels/quant). Q4_1 and Q5_1
// too come from GGUF files; their products are re-encoded at load (Q8_0 rows and one
// offset a block: graph/projection.hpp, create_offset_blocks). Q4_0C and Q8_0C (headwise's
// own, kernels/quant/blocks.hpp) are Hugging Face GPTQ/AWQ weights with zero points as
// the Hugging Face loader re-encodes them (formats/hf_quantized.cpp); their products
// are the Q4_0/Q8_0 ones plus the blocks' offsets, as Q4_1's.
// I32: the packed integers of Hugging Face GPTQ/AWQ checkpoints (qweight, qzeros, g_idx),
// which the loader turns into blocks; no product or op reads an I32 tensor.
enum class DType { f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q4_1, q5_1, q3_k, iq4_xs, q2_k, q4_0c, q8_0c, i32 };
// The types whose products are a base type's plus one offset a block (create_offset_blocks).
inline bool dtype_has_offsets(DType t) {
  return t == DType::q4_1 || t == DType::q5_1 || t == DType::q4_0c || t == DType::q8_0c;
}
const char* dtype_name(DType t);
size_t dtype_size(DType t);  // bytes per element; 0 for the block types
bool dtype_is_block(DType t);
// Bytes of a row of `cols` elements (block types: cols a multiple of the block).
size_t dtype_row_bytes(DType t, int64_t cols);
// The weight-catalogue type of a DType (kernels/quant/quant.hpp; f32 for f32).
kernels::quant::WType dtype_quant_type(DType t);

// A named tensor whose bytes live elsewhere (usually inside a mapping).
struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  // A block-type matrix [N][K] whose columns are stored permuted: stored column j is
  // column perm[j] (K entries, kept alive with the data). GPTQ act-order layers, whose
  // groups interleave the input rows (formats/hf_quantized.hpp): products gather their
  // inputs in this order (graph/projection.hpp, set_input_permutation). Null: in order.
  const int32_t* perm = nullptr;
  int64_t numel() const;
  std::string shape_str() const;  // "[512, 64]"
};

// Converts n elements of any DType to float (block types: n a multiple of the block).
void to_f32(DType t, const uint8_t* src, size_t n, float* dst);

// A read-only memory mapping of a whole file.
class MappedFile {
 public:
  static Status open(const std::string& path, std::unique_ptr<MappedFile>* out);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Tells the kernel this process no longer needs its pages of [p, p + n) — the whole
  // pages inside it — when that range lies in a live MappedFile (madvise MADV_DONTNEED):
  // a plan that keeps its own copy of a weight (oneDNN's blocked f32 layout, a repacked
  // panel layout) would otherwise hold both in its resident memory. The file's pages
  // stay in the page cache, and a later read of the range (an embedding row of a tied
  // classifier, a second plan) faults them back in with the same bytes, because the
  // mapping is private and never written. Any other range (heap memory, whose contents
  // MADV_DONTNEED would zero) is left alone. Returns the bytes released.
  static size_t release_resident(const void* p, size_t n);
  // True when [p, p + n) lies inside a live MappedFile.
  static bool holds(const void* p, size_t n);

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// A safetensors file (https://github.com/huggingface/safetensors): 8-byte little-endian
// header length, a JSON header {name: {dtype, shape, data_offsets: [begin, end]}, ...,
// "__metadata__": {...}}, then the data. Tensors are views into the mapping.
// Validated on open: header length within the file, JSON well formed, every entry has
// a known dtype, non-negative shape, offsets inside the data section, and
// end − begin == numel · dtype size. Supported dtypes: F32, F16, BF16 (others are an
// error naming the tensor and dtype).
class SafetensorsFile {
 public:
  static Status open(const std::string& path, std::unique_ptr<SafetensorsFile>* out);
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return file_->path(); }
  size_t file_size() const { return file_->size(); }

 private:
  std::unique_ptr<MappedFile> file_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (in the given order, 8-byte aligned data) to a safetensors file.
Status write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

// A llama2.c checkpoint ("version 0" format, see ../shared/models/README.md), mapped
// and exposed as named f32 tensors in Meta Llama naming:
//   tok_embeddings.weight (vocab, dim)         norm.weight (dim)
//   layers.{l}.attention_norm.weight (dim)     layers.{l}.ffn_norm.weight (dim)
//   layers.{l}.attention.wq.weight (dim, dim)  layers.{l}.attention.wk.weight (kv_dim, dim)
//   layers.{l}.attention.wv.weight (kv_dim, dim)  layers.{l}.attention.wo.weight (dim, dim)
//   layers.{l}.feed_forward.w1.weight (hidden, dim)  .w2.weight (dim, hidden)
//   layers.{l}.feed_forward.w3.weight (hidden, dim)
//   output.weight (vocab, dim) — only when the classifier is not shared
// Validated: header fields positive, dim % n_heads == 0, n_heads % n_kv_heads == 0,
// file size exactly what the header implies (truncated or oversized files are errors
// naming the expected and actual sizes).
struct Llama2cConfig {
  int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0,
      seq_len = 0;
  bool shared_classifier = true;
  int head_size() const { return dim / n_heads; }
  int kv_dim() const { return head_size() * n_kv_heads; }
};

class Llama2cCheckpoint {
 public:
  static Status open(const std::string& path, std::unique_ptr<Llama2cCheckpoint>* out);
  const Llama2cConfig& config() const { return config_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;
  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<MappedFile> file_;
  Llama2cConfig config_;
  std::vector<TensorView> tensors_;
};

}  // namespace headwise::graph
