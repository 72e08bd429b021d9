// Writing GGUF files (version 3, little-endian; layout in gguf.hpp): the tests' own
// random-weight models, the fuzz seeds, and `headwise convert`. Metadata keys keep the
// order they were first set in (setting a key again replaces its value); tensors are
// laid out in the order added, each at a multiple of the alignment.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.hpp"
#include "headwise/status.hpp"

namespace headwise::formats {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = GgufFile::kDefaultAlignment, uint32_t version = 3);

  void set_u8(const std::string& key, uint8_t v);
  void set_i8(const std::string& key, int8_t v);
  void set_u16(const std::string& key, uint16_t v);
  void set_i16(const std::string& key, int16_t v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_i64(const std::string& key, int64_t v);
  void set_f32(const std::string& key, float v);
  void set_f64(const std::string& key, double v);
  void set_bool(const std::string& key, bool v);
  void set_str(const std::string& key, const std::string& v);
  void set_str_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  // A value read from another file (any type, nested arrays included), re-encoded.
  void set_value(const std::string& key, const GgufValue& v);
  // A value of type `type` whose encoding (after the type tag) is `bytes` as given:
  // for tests that need values no typed setter makes.
  void set_encoded(const std::string& key, GgufType type, std::vector<uint8_t> bytes);
  void remove(const std::string& key);

  // A tensor of ggml type `type` with dimensions `ne` (ggml order: ne[0] contiguous).
  // `data` must hold exactly the type's byte size for that shape and stay valid until
  // write(); checked here.
  Status add_tensor(const std::string& name, uint32_t type, const std::vector<int64_t>& ne,
                    const void* data, size_t nbytes);
  // Same, for an f32 tensor given in row-major `shape` order (PyTorch convention).
  Status add_f32(const std::string& name, const std::vector<int64_t>& shape, const float* data);

  Status write(const std::string& path) const;
  std::vector<uint8_t> bytes() const;  // the whole file in memory (small files only)

 private:
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> ne;
    const uint8_t* data;
    uint64_t nbytes, offset;
  };
  void set(const std::string& key, GgufType type, std::vector<uint8_t> bytes);
  std::vector<uint8_t> header() const;

  uint32_t alignment_, version_;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kv_;  // key → type tag + value
  std::vector<Tensor> tensors_;
  uint64_t data_size_ = 0;
};

}  // namespace headwise::formats
