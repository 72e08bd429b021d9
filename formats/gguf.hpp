// GGUF files (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), versions 2
// and 3: what llama.cpp, Ollama and LM Studio users download. Layout, little-endian:
//
//   "GGUF" u32 version  u64 n_tensors  u64 n_kv
//   n_kv × { string key, u32 value_type, value }        string = u64 length + bytes
//   n_tensors × { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   padding to `general.alignment` (default 32), then the tensor data; each tensor's
//   offset is relative to the data section and a multiple of the alignment.
//
// The whole file is memory-mapped and validated on open, before anything is exposed:
// every size is 64-bit and checked for overflow, every count is bounded by the bytes
// left in the file before anything is allocated, tensors lie inside the file, the
// alignment is a power of two, keys and tensor names are unique, arrays nest at most
// kMaxArrayDepth deep. Errors are format_error/unsupported Statuses whose message starts
// with the file name and names the key or tensor at fault. Strings and tensor data are
// views into the mapping (valid as long as the GgufFile lives).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/weights.hpp"
#include "headwise/status.hpp"

namespace headwise::formats {

// Metadata value types (gguf_type in the specification).
enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
const char* gguf_type_name(GgufType t);  // "u32", "string", ... ; "?" when unknown

// One metadata value. Scalars are widened into `i` (signed and unsigned integers and
// bool; a u64 above INT64_MAX is kept as its bit pattern, see as_u64) or `f`; strings
// and string arrays are views into the mapping; numeric arrays keep a pointer to their
// little-endian elements (possibly unaligned: read them with int_at/float_at).
struct GgufValue {
  GgufType type = GgufType::u8;
  int64_t i = 0;
  double f = 0;
  std::string_view str;
  // arrays
  GgufType elem = GgufType::u8;
  uint64_t count = 0;
  const uint8_t* raw = nullptr;            // numeric / bool elements
  std::vector<std::string_view> strings;   // string elements
  std::vector<GgufValue> items;            // array elements (nested arrays)

  bool is_int() const;     // any integer type or bool
  bool is_float() const { return type == GgufType::f32 || type == GgufType::f64; }
  bool is_numeric_array() const;  // integer, float or bool elements
  // Element i of a numeric array, widened (exact for every integer type; u64 elements
  // above INT64_MAX come back as their bit pattern).
  int64_t int_at(uint64_t i) const;
  double float_at(uint64_t i) const;  // any numeric element type
  std::string type_str() const;        // "u32", "array[string]", "array[array[i32]]"
};

// ggml tensor types (ggml_type). Every type llama.cpp writes today has a block size
// here so the reader can check sizes; which types headwise can compute with is decided
// by the loader, not the reader.
struct GgmlTypeInfo {
  const char* name;   // "F32", "Q4_K", ...; nullptr for an unknown/removed id
  int block;          // elements per block
  int bytes;          // bytes per block
};
GgmlTypeInfo ggml_type_info(uint32_t type);
enum GgmlType : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30 };

struct GgufTensor {
  std::string name;
  uint32_t type = 0;            // ggml_type
  std::vector<int64_t> ne;      // GGUF/ggml order: ne[0] is the contiguous dimension
  uint64_t offset = 0;          // in the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;
  int64_t numel() const;
  // The shape in row-major (PyTorch/safetensors) order: ne reversed. A ggml tensor with
  // ne = {K, N} is an [N][K] matrix.
  std::vector<int64_t> shape() const;
  const char* type_name() const;  // "F32", "Q4_K", or "type 77"
};

class GgufFile {
 public:
  static constexpr int kMaxArrayDepth = 8;
  static constexpr uint32_t kDefaultAlignment = 32;

  static Status open(const std::string& path, std::unique_ptr<GgufFile>* out);
  // Parses a buffer the caller keeps alive (fuzzing, tests); `label` names it in errors.
  static Status parse(const uint8_t* data, size_t size, const std::string& label,
                      std::unique_ptr<GgufFile>* out);

  const std::string& path() const { return label_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section
  size_t file_size() const { return size_; }

  // Metadata in file order, and lookup by key (nullptr when absent).
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }

  // Typed getters: not_found when the key is absent; format_error when its type does
  // not fit (any integer type whose value is in range is accepted for an integer;
  // f32/f64 for a float; bool for a bool). Messages name the file and key.
  Status get_u32(const std::string& key, uint32_t* out) const;
  Status get_i64(const std::string& key, int64_t* out) const;
  Status get_u64(const std::string& key, uint64_t* out) const;
  Status get_f32(const std::string& key, float* out) const;
  Status get_bool(const std::string& key, bool* out) const;
  Status get_str(const std::string& key, std::string* out) const;
  // An array, optionally with a required element type (GgufType::array matches nested
  // arrays; pass nullptr elem to accept any).
  Status get_arr(const std::string& key, const GgufType* elem, const GgufValue** out) const;
  // The same getters, but an absent key leaves *out unchanged and returns Ok.
  Status opt_u32(const std::string& key, uint32_t* out) const;
  Status opt_f32(const std::string& key, float* out) const;
  Status opt_bool(const std::string& key, bool* out) const;
  Status opt_str(const std::string& key, std::string* out) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;

 private:
  GgufFile() = default;
  Status parse_all();
  Status type_error(const std::string& key, const GgufValue& v, const char* want) const;

  std::unique_ptr<graph::MappedFile> file_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string label_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace headwise::formats
