// SafetensorsFile::open: maps a .safetensors file and validates its header before any
// tensor is exposed. Every message starts with the path and names the tensor or
// header field at fault. Tensors are listed in data-offset order (the order a writer
// laid them out), independent of the JSON key order.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "graph/json_strict.hpp"
#include "graph/weights.hpp"

namespace headwise::graph {
namespace {

using json = nlohmann::json;

bool parse_dtype(const std::string& s, DType* t) {
  if (s == "F32") *t = DType::f32;
  else if (s == "F16") *t = DType::f16;
  else if (s == "BF16") *t = DType::bf16;
  else if (s == "I32") *t = DType::i32;  // GPTQ/AWQ packed integers (formats/hf_quantized.cpp)
  else return false;
  return true;
}

// A JSON value that is a non-negative integer (1.0 and "1" are not).
bool as_u64(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

struct Entry {
  TensorView view;
  uint64_t begin = 0, end = 0;
};

// Checks one header entry against a data section of `data_size` bytes.
Status parse_entry(const std::string& path, const std::string& name, const json& e,
                   uint64_t data_size, Entry* out) {
  const std::string at = path + ": tensor '" + name + "': ";
  if (!e.is_object()) return format_error(at + "entry is " + e.type_name() + ", not an object");

  auto dt = e.find("dtype");
  if (dt == e.end()) return format_error(at + "missing 'dtype'");
  if (!dt->is_string()) return format_error(at + "'dtype' is not a string");
  if (!parse_dtype(dt->get<std::string>(), &out->view.dtype))
    return unsupported(at + "dtype '" + dt->get<std::string>() +
                       "' is not supported (F32, F16 and BF16 are)");

  auto sh = e.find("shape");
  if (sh == e.end()) return format_error(at + "missing 'shape'");
  if (!sh->is_array()) return format_error(at + "'shape' is not an array");
  // numel is kept in uint64 with an overflow check: a crafted shape must not wrap
  // around to a size that happens to match the offsets.
  uint64_t numel = 1;
  bool overflow = false;
  for (const json& d : *sh) {
    uint64_t n;
    if (!as_u64(d, &n) || n > uint64_t(INT64_MAX))
      return format_error(at + "'shape' " + json_brief(*sh) + " is not a list of non-negative integers");
    out->view.shape.push_back(static_cast<int64_t>(n));
    overflow |= __builtin_mul_overflow(numel, n, &numel);
  }
  uint64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(numel, uint64_t(dtype_size(out->view.dtype)), &nbytes);
  if (overflow) return format_error(at + "shape " + json_brief(*sh) + " overflows a 64-bit size");

  auto off = e.find("data_offsets");
  if (off == e.end()) return format_error(at + "missing 'data_offsets'");
  if (!off->is_array() || off->size() != 2 || !as_u64((*off)[0], &out->begin) ||
      !as_u64((*off)[1], &out->end))
    return format_error(at + "'data_offsets' " + json_brief(*off) +
                        " is not two non-negative integers [begin, end]");
  if (out->begin > out->end)
    return format_error(at + "data_offsets begin " + std::to_string(out->begin) + " > end " +
                        std::to_string(out->end));
  if (out->end > data_size)
    return format_error(at + "data_offsets end " + std::to_string(out->end) +
                        " is beyond the data section of " + std::to_string(data_size) + " bytes");
  if (out->end - out->begin != nbytes)
    return format_error(at + "data_offsets span " + std::to_string(out->end - out->begin) +
                        " bytes but shape " + json_brief(*sh) + " of " + dt->get<std::string>() +
                        " needs " + std::to_string(nbytes));
  out->view.name = name;
  out->view.nbytes = static_cast<size_t>(nbytes);
  return Status::Ok();
}

Status parse_metadata(const std::string& path, const json& m,
                      std::map<std::string, std::string>* out) {
  if (!m.is_object())
    return format_error(path + ": field '__metadata__' is " + m.type_name() + ", not an object");
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it.value().is_string())
      return format_error(path + ": field '__metadata__' key '" + it.key() +
                          "' is not a string");
    (*out)[it.key()] = it.value().get<std::string>();
  }
  return Status::Ok();
}

}  // namespace

Status SafetensorsFile::open(const std::string& path, std::unique_ptr<SafetensorsFile>* out) {
  if (out == nullptr) return invalid_argument("SafetensorsFile::open(" + path + "): out is null");
  out->reset();
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  HW_RETURN_IF_ERROR(MappedFile::open(path, &f->file_));
  const uint8_t* base = f->file_->data();
  const uint64_t size = f->file_->size();

  if (size < 8)
    return format_error(path + ": " + std::to_string(size) +
                        " bytes, shorter than the 8-byte header length field");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base[i];  // little-endian
  if (header_len > size - 8)
    return format_error(path + ": header length " + std::to_string(header_len) +
                        " is larger than the " + std::to_string(size - 8) +
                        " bytes that follow the header length field");
  // The format's own limit (safetensors refuses larger headers too).
  constexpr uint64_t kMaxHeaderBytes = 100000000;
  if (header_len > kMaxHeaderBytes)
    return format_error(path + ": header length " + std::to_string(header_len) +
                        " is above the format's limit of " + std::to_string(kMaxHeaderBytes) + " bytes");
  const char* text = reinterpret_cast<const char*>(base + 8);
  const uint8_t* data = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  // Duplicate tensor names are refused here (JSON keys); so is nesting deeper than
  // any header needs.
  json header;
  HW_RETURN_IF_ERROR(parse_json_strict(text, text + header_len, path + ": header", &header));
  if (!header.is_object())
    return format_error(path + ": header is JSON " + header.type_name() + ", not an object");

  std::vector<Entry> entries;
  try {  // the accessors below do not throw on the checked paths; this is a backstop
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        HW_RETURN_IF_ERROR(parse_metadata(path, it.value(), &f->metadata_));
        continue;
      }
      Entry e;
      HW_RETURN_IF_ERROR(parse_entry(path, it.key(), it.value(), data_size, &e));
      e.view.data = data + e.begin;
      entries.push_back(std::move(e));
    }
  } catch (const json::exception& e) {
    return format_error(path + ": malformed header: " + e.what());
  }

  // Overlapping ranges are legal in the format and harmless for read-only views.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.view.name < b.view.name;
  });
  for (Entry& e : entries) {
    f->index_[e.view.name] = f->tensors_.size();
    f->tensors_.push_back(std::move(e.view));
  }
  *out = std::move(f);
  return Status::Ok();
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace headwise::graph
