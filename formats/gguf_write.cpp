// GgufWriter: metadata encoded as it is set, tensors referenced until write().
#include "formats/gguf_write.hpp"

#include <cstdio>
#include <cstring>
#include <memory>

namespace headwise::formats {
namespace {

template <typename T>
void put(std::vector<uint8_t>* b, T v) {
  const size_t n = b->size();
  b->resize(n + sizeof(T));
  std::memcpy(b->data() + n, &v, sizeof(T));
}

void put_str(std::vector<uint8_t>* b, std::string_view s) {
  put<uint64_t>(b, s.size());
  b->insert(b->end(), s.begin(), s.end());
}

size_t elem_size(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    default: return 8;
  }
}

// The encoding of v after its type tag.
void encode(const GgufValue& v, std::vector<uint8_t>* b) {
  switch (v.type) {
    case GgufType::u8: put<uint8_t>(b, uint8_t(v.i)); break;
    case GgufType::i8: put<int8_t>(b, int8_t(v.i)); break;
    case GgufType::boolean: put<uint8_t>(b, v.i ? 1 : 0); break;
    case GgufType::u16: put<uint16_t>(b, uint16_t(v.i)); break;
    case GgufType::i16: put<int16_t>(b, int16_t(v.i)); break;
    case GgufType::u32: put<uint32_t>(b, uint32_t(v.i)); break;
    case GgufType::i32: put<int32_t>(b, int32_t(v.i)); break;
    case GgufType::u64: put<uint64_t>(b, uint64_t(v.i)); break;
    case GgufType::i64: put<int64_t>(b, v.i); break;
    case GgufType::f32: put<float>(b, float(v.f)); break;
    case GgufType::f64: put<double>(b, v.f); break;
    case GgufType::string: put_str(b, v.str); break;
    case GgufType::array:
      put<uint32_t>(b, static_cast<uint32_t>(v.elem));
      put<uint64_t>(b, v.count);
      if (v.elem == GgufType::string) {
        for (std::string_view s : v.strings) put_str(b, s);
      } else if (v.elem == GgufType::array) {
        for (const GgufValue& item : v.items) encode(item, b);
      } else {
        b->insert(b->end(), v.raw, v.raw + v.count * elem_size(v.elem));
      }
      break;
  }
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment, uint32_t version) : alignment_(alignment), version_(version) {
  if (alignment_ != GgufFile::kDefaultAlignment) set_u32("general.alignment", alignment_);
}

void GgufWriter::set(const std::string& key, GgufType type, std::vector<uint8_t> bytes) {
  std::vector<uint8_t> tagged;
  put<uint32_t>(&tagged, static_cast<uint32_t>(type));
  tagged.insert(tagged.end(), bytes.begin(), bytes.end());
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(tagged);
      return;
    }
  kv_.emplace_back(key, std::move(tagged));
}

void GgufWriter::set_encoded(const std::string& key, GgufType type, std::vector<uint8_t> bytes) {
  set(key, type, std::move(bytes));
}

void GgufWriter::remove(const std::string& key) {
  for (auto it = kv_.begin(); it != kv_.end(); ++it)
    if (it->first == key) {
      kv_.erase(it);
      return;
    }
}

#define HW_GGUF_SCALAR_SETTER(fn, T, tag)           \
  void GgufWriter::fn(const std::string& key, T v) { \
    std::vector<uint8_t> b;                          \
    put<T>(&b, v);                                   \
    set(key, GgufType::tag, std::move(b));           \
  }
HW_GGUF_SCALAR_SETTER(set_u8, uint8_t, u8)
HW_GGUF_SCALAR_SETTER(set_i8, int8_t, i8)
HW_GGUF_SCALAR_SETTER(set_u16, uint16_t, u16)
HW_GGUF_SCALAR_SETTER(set_i16, int16_t, i16)
HW_GGUF_SCALAR_SETTER(set_u32, uint32_t, u32)
HW_GGUF_SCALAR_SETTER(set_i32, int32_t, i32)
HW_GGUF_SCALAR_SETTER(set_u64, uint64_t, u64)
HW_GGUF_SCALAR_SETTER(set_i64, int64_t, i64)
HW_GGUF_SCALAR_SETTER(set_f32, float, f32)
HW_GGUF_SCALAR_SETTER(set_f64, double, f64)
#undef HW_GGUF_SCALAR_SETTER

void GgufWriter::set_bool(const std::string& key, bool v) {
  set(key, GgufType::boolean, {static_cast<uint8_t>(v ? 1 : 0)});
}

void GgufWriter::set_str(const std::string& key, const std::string& v) {
  std::vector<uint8_t> b;
  put_str(&b, v);
  set(key, GgufType::string, std::move(b));
}

void GgufWriter::set_str_array(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> b;
  put<uint32_t>(&b, static_cast<uint32_t>(GgufType::string));
  put<uint64_t>(&b, v.size());
  for (const std::string& s : v) put_str(&b, s);
  set(key, GgufType::array, std::move(b));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  std::vector<uint8_t> b;
  put<uint32_t>(&b, static_cast<uint32_t>(GgufType::f32));
  put<uint64_t>(&b, v.size());
  for (float x : v) put<float>(&b, x);
  set(key, GgufType::array, std::move(b));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<uint8_t> b;
  put<uint32_t>(&b, static_cast<uint32_t>(GgufType::i32));
  put<uint64_t>(&b, v.size());
  for (int32_t x : v) put<int32_t>(&b, x);
  set(key, GgufType::array, std::move(b));
}

void GgufWriter::set_value(const std::string& key, const GgufValue& v) {
  std::vector<uint8_t> b;
  encode(v, &b);
  set(key, v.type, std::move(b));
}

Status GgufWriter::add_tensor(const std::string& name, uint32_t type, const std::vector<int64_t>& ne,
                              const void* data, size_t nbytes) {
  const GgmlTypeInfo ti = ggml_type_info(type);
  if (ti.name == nullptr) return invalid_argument("GgufWriter: tensor '" + name + "': unknown ggml type " + std::to_string(type));
  if (ne.empty() || ne.size() > 4) return invalid_argument("GgufWriter: tensor '" + name + "': needs 1..4 dimensions");
  uint64_t numel = 1;
  for (int64_t d : ne) {
    if (d < 0) return invalid_argument("GgufWriter: tensor '" + name + "': negative dimension");
    numel *= static_cast<uint64_t>(d);
  }
  if (ne[0] % ti.block != 0)
    return invalid_argument("GgufWriter: tensor '" + name + "': ne[0] is not a multiple of the block size");
  const uint64_t want = numel / ti.block * ti.bytes;
  if (want != nbytes)
    return invalid_argument("GgufWriter: tensor '" + name + "': " + std::to_string(nbytes) +
                            " bytes given, " + std::to_string(want) + " expected");
  for (const Tensor& t : tensors_)
    if (t.name == name) return invalid_argument("GgufWriter: tensor '" + name + "' added twice");
  tensors_.push_back({name, type, ne, static_cast<const uint8_t*>(data), nbytes, data_size_});
  data_size_ = (data_size_ + nbytes + alignment_ - 1) / alignment_ * alignment_;
  return Status::Ok();
}

Status GgufWriter::add_f32(const std::string& name, const std::vector<int64_t>& shape, const float* data) {
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  return add_tensor(name, kGgmlF32, std::vector<int64_t>(shape.rbegin(), shape.rend()), data,
                    numel * sizeof(float));
}

std::vector<uint8_t> GgufWriter::header() const {
  std::vector<uint8_t> b;
  b.insert(b.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(&b, version_);
  put<uint64_t>(&b, tensors_.size());
  put<uint64_t>(&b, kv_.size());
  for (const auto& [key, value] : kv_) {
    put_str(&b, key);
    b.insert(b.end(), value.begin(), value.end());
  }
  for (const Tensor& t : tensors_) {
    put_str(&b, t.name);
    put<uint32_t>(&b, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(&b, static_cast<uint64_t>(d));
    put<uint32_t>(&b, t.type);
    put<uint64_t>(&b, t.offset);
  }
  b.resize((b.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  return b;
}

std::vector<uint8_t> GgufWriter::bytes() const {
  std::vector<uint8_t> b = header();
  const size_t base = b.size();
  b.resize(base + data_size_, 0);
  for (const Tensor& t : tensors_)
    if (t.nbytes) std::memcpy(b.data() + base + t.offset, t.data, t.nbytes);
  return b;
}

Status GgufWriter::write(const std::string& path) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return io_error(path + ": cannot open for writing");
  const std::vector<uint8_t> h = header();
  bool ok = std::fwrite(h.data(), 1, h.size(), f.get()) == h.size();
  uint64_t at = 0;
  static const uint8_t zeros[64] = {};
  for (const Tensor& t : tensors_) {
    for (; ok && at < t.offset; at += std::min<uint64_t>(64, t.offset - at))
      ok = std::fwrite(zeros, 1, std::min<uint64_t>(64, t.offset - at), f.get()) == std::min<uint64_t>(64, t.offset - at);
    if (ok && t.nbytes) ok = std::fwrite(t.data, 1, t.nbytes, f.get()) == t.nbytes;
    at += t.nbytes;
  }
  for (; ok && at < data_size_; at += std::min<uint64_t>(64, data_size_ - at))
    ok = std::fwrite(zeros, 1, std::min<uint64_t>(64, data_size_ - at), f.get()) == std::min<uint64_t>(64, data_size_ - at);
  if (!ok) return io_error(path + ": write failed");
  if (std::fclose(f.release()) != 0) return io_error(path + ": write failed (close)");
  return Status::Ok();
}

}  // namespace headwise::formats
