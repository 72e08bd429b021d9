// GgufFile: parsing and validating a GGUF file (see gguf.hpp for the layout and the
// checks). The parser walks a bounds-checked cursor over the mapping; every count read
// from the file is compared with the bytes that remain before anything is reserved, so
// a hostile header cannot make it allocate more than the file could describe.
#include "formats/gguf.hpp"

#include <cstring>
#include <limits>

namespace headwise::formats {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxDims = 4;              // GGML_MAX_DIMS

size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    case GgufType::string: case GgufType::array: return 0;
  }
  return 0;
}

bool known_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::f64); }

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Reads a scalar of type t at p (size already checked) into v's i/f fields.
void read_scalar(GgufType t, const uint8_t* p, GgufValue* v) {
  switch (t) {
    case GgufType::u8: v->i = load<uint8_t>(p); break;
    case GgufType::i8: v->i = load<int8_t>(p); break;
    case GgufType::boolean: v->i = load<uint8_t>(p); break;
    case GgufType::u16: v->i = load<uint16_t>(p); break;
    case GgufType::i16: v->i = load<int16_t>(p); break;
    case GgufType::u32: v->i = load<uint32_t>(p); break;
    case GgufType::i32: v->i = load<int32_t>(p); break;
    case GgufType::u64: v->i = static_cast<int64_t>(load<uint64_t>(p)); break;
    case GgufType::i64: v->i = load<int64_t>(p); break;
    case GgufType::f32: v->f = load<float>(p); break;
    case GgufType::f64: v->f = load<double>(p); break;
    case GgufType::string: case GgufType::array: break;
  }
}

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& label)
      : data_(data), size_(size), label_(label) {}
  size_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  Status need(uint64_t n, const std::string& what) const {
    if (n > left())
      return format_error(label_ + ": truncated: " + what + " needs " + std::to_string(n) +
                          " bytes at offset " + std::to_string(pos_) + " but the file has " +
                          std::to_string(left()) + " left");
    return Status::Ok();
  }
  template <typename T>
  Status read(T* out, const std::string& what) {
    HW_RETURN_IF_ERROR(need(sizeof(T), what));
    *out = load<T>(here());
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status skip(uint64_t n, const std::string& what) {
    HW_RETURN_IF_ERROR(need(n, what));
    pos_ += static_cast<size_t>(n);
    return Status::Ok();
  }
  Status string(std::string_view* out, const std::string& what) {
    uint64_t len = 0;
    HW_RETURN_IF_ERROR(read(&len, what + " (string length)"));
    HW_RETURN_IF_ERROR(need(len, what + " (" + std::to_string(len) + "-byte string)"));
    *out = std::string_view(reinterpret_cast<const char*>(here()), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return Status::Ok();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& label_;
};

// Reads a value of type t; `what` names it ("key 'x'", "key 'x'[3]").
Status read_value(Cursor* c, GgufType t, int depth, const std::string& label,
                  const std::string& what, GgufValue* v) {
  v->type = t;
  if (t == GgufType::string) return c->string(&v->str, what);
  if (t != GgufType::array) {
    const size_t n = scalar_size(t);
    HW_RETURN_IF_ERROR(c->need(n, what));
    read_scalar(t, c->here(), v);
    if (t == GgufType::boolean && v->i > 1)
      return format_error(label + ": " + what + ": bool value " + std::to_string(v->i) + " is not 0 or 1");
    return c->skip(n, what);
  }
  if (depth >= GgufFile::kMaxArrayDepth)
    return format_error(label + ": " + what + ": arrays nested deeper than " +
                        std::to_string(GgufFile::kMaxArrayDepth));
  uint32_t et = 0;
  HW_RETURN_IF_ERROR(c->read(&et, what + " (array element type)"));
  if (!known_type(et))
    return format_error(label + ": " + what + ": unknown array element type " + std::to_string(et));
  v->elem = static_cast<GgufType>(et);
  HW_RETURN_IF_ERROR(c->read(&v->count, what + " (array length)"));
  // Every element takes at least this many bytes: a count the rest of the file cannot
  // hold is refused before anything is reserved for it.
  const uint64_t min_elem = v->elem == GgufType::string ? 8 : v->elem == GgufType::array ? 12
                                                                                          : scalar_size(v->elem);
  if (v->count > c->left() / min_elem)
    return format_error(label + ": " + what + ": array of " + std::to_string(v->count) + " " +
                        gguf_type_name(v->elem) + " elements does not fit in the " +
                        std::to_string(c->left()) + " bytes left in the file");
  if (v->elem == GgufType::string) {
    v->strings.resize(static_cast<size_t>(v->count));
    for (uint64_t i = 0; i < v->count; ++i)
      HW_RETURN_IF_ERROR(c->string(&v->strings[i], what + "[" + std::to_string(i) + "]"));
  } else if (v->elem == GgufType::array) {
    v->items.resize(static_cast<size_t>(v->count));
    for (uint64_t i = 0; i < v->count; ++i)
      HW_RETURN_IF_ERROR(read_value(c, GgufType::array, depth + 1, label,
                                    what + "[" + std::to_string(i) + "]", &v->items[i]));
  } else {
    v->raw = c->here();
    HW_RETURN_IF_ERROR(c->skip(v->count * min_elem, what));
    if (v->elem == GgufType::boolean)
      for (uint64_t i = 0; i < v->count; ++i)
        if (v->raw[i] > 1)
          return format_error(label + ": " + what + "[" + std::to_string(i) + "]: bool value " +
                              std::to_string(v->raw[i]) + " is not 0 or 1");
  }
  return Status::Ok();
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::u8: return "u8";
    case GgufType::i8: return "i8";
    case GgufType::u16: return "u16";
    case GgufType::i16: return "i16";
    case GgufType::u32: return "u32";
    case GgufType::i32: return "i32";
    case GgufType::f32: return "f32";
    case GgufType::boolean: return "bool";
    case GgufType::string: return "string";
    case GgufType::array: return "array";
    case GgufType::u64: return "u64";
    case GgufType::i64: return "i64";
    case GgufType::f64: return "f64";
  }
  return "?";
}

GgmlTypeInfo ggml_type_info(uint32_t type) {
  // ggml.c's type_traits (block size, bytes per block); ids 4, 5 and 31-33 were removed.
  static const GgmlTypeInfo kTable[] = {
      {"F32", 1, 4},        {"F16", 1, 2},        {"Q4_0", 32, 18},     {"Q4_1", 32, 20},
      {nullptr, 0, 0},      {nullptr, 0, 0},      {"Q5_0", 32, 22},     {"Q5_1", 32, 24},
      {"Q8_0", 32, 34},     {"Q8_1", 32, 36},     {"Q2_K", 256, 84},    {"Q3_K", 256, 110},
      {"Q4_K", 256, 144},   {"Q5_K", 256, 176},   {"Q6_K", 256, 210},   {"Q8_K", 256, 292},
      {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74},  {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
      {"IQ4_NL", 32, 18},   {"IQ3_S", 256, 110},  {"IQ2_S", 256, 82},   {"IQ4_XS", 256, 136},
      {"I8", 1, 1},         {"I16", 1, 2},        {"I32", 1, 4},        {"I64", 1, 8},
      {"F64", 1, 8},        {"IQ1_M", 256, 56},   {"BF16", 1, 2},       {nullptr, 0, 0},
      {nullptr, 0, 0},      {nullptr, 0, 0},      {"TQ1_0", 256, 54},   {"TQ2_0", 256, 66},
      {nullptr, 0, 0},      {nullptr, 0, 0},      {nullptr, 0, 0},      {"MXFP4", 32, 17},
  };
  if (type >= sizeof(kTable) / sizeof(kTable[0])) return {nullptr, 0, 0};
  return kTable[type];
}

// ---- GgufValue ---------------------------------------------------------------------------

bool GgufValue::is_int() const {
  switch (type) {
    case GgufType::u8: case GgufType::i8: case GgufType::u16: case GgufType::i16:
    case GgufType::u32: case GgufType::i32: case GgufType::u64: case GgufType::i64:
    case GgufType::boolean:
      return true;
    default:
      return false;
  }
}

bool GgufValue::is_numeric_array() const {
  return type == GgufType::array && elem != GgufType::string && elem != GgufType::array;
}

int64_t GgufValue::int_at(uint64_t idx) const {
  GgufValue v;
  read_scalar(elem, raw + idx * scalar_size(elem), &v);
  if (elem != GgufType::f32 && elem != GgufType::f64) return v.i;
  // A float element read as an integer saturates (NaN to the minimum), so the caller's
  // range check refuses it; converting an out-of-range double to int64 is undefined.
  if (!(v.f > -9.2e18 && v.f < 9.2e18)) return v.f > 0 ? INT64_MAX : INT64_MIN;
  return static_cast<int64_t>(v.f);
}

double GgufValue::float_at(uint64_t idx) const {
  GgufValue v;
  read_scalar(elem, raw + idx * scalar_size(elem), &v);
  if (elem == GgufType::f32 || elem == GgufType::f64) return v.f;
  return elem == GgufType::u64 ? static_cast<double>(static_cast<uint64_t>(v.i)) : static_cast<double>(v.i);
}

std::string GgufValue::type_str() const {
  if (type != GgufType::array) return gguf_type_name(type);
  if (elem == GgufType::array)
    return "array[" + (items.empty() ? std::string("array") : items[0].type_str()) + "]";
  return std::string("array[") + gguf_type_name(elem) + "]";
}

// ---- GgufTensor ---------------------------------------------------------------------------

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;  // bounded at parse time
  return n;
}

std::vector<int64_t> GgufTensor::shape() const { return std::vector<int64_t>(ne.rbegin(), ne.rend()); }

const char* GgufTensor::type_name() const {
  const char* n = ggml_type_info(type).name;
  return n ? n : "unknown";
}

// ---- GgufFile -----------------------------------------------------------------------------

Status GgufFile::open(const std::string& path, std::unique_ptr<GgufFile>* out) {
  if (out == nullptr) return invalid_argument("GgufFile::open(" + path + "): out is null");
  out->reset();
  auto f = std::unique_ptr<GgufFile>(new GgufFile);
  HW_RETURN_IF_ERROR(graph::MappedFile::open(path, &f->file_));
  f->data_ = f->file_->data();
  f->size_ = f->file_->size();
  f->label_ = path;
  HW_RETURN_IF_ERROR(f->parse_all());
  *out = std::move(f);
  return Status::Ok();
}

Status GgufFile::parse(const uint8_t* data, size_t size, const std::string& label,
                       std::unique_ptr<GgufFile>* out) {
  if (out == nullptr) return invalid_argument("GgufFile::parse(" + label + "): out is null");
  out->reset();
  if (data == nullptr && size > 0) return invalid_argument("GgufFile::parse(" + label + "): data is null");
  auto f = std::unique_ptr<GgufFile>(new GgufFile);
  f->data_ = data;
  f->size_ = size;
  f->label_ = label;
  HW_RETURN_IF_ERROR(f->parse_all());
  *out = std::move(f);
  return Status::Ok();
}

Status GgufFile::parse_all() {
  Cursor c(data_, size_, label_);
  uint32_t magic = 0;
  if (size_ < 4) return format_error(label_ + ": not a GGUF file (" + std::to_string(size_) + " bytes, no magic)");
  HW_RETURN_IF_ERROR(c.read(&magic, "magic"));
  if (magic != kMagic)
    return format_error(label_ + ": not a GGUF file (the first 4 bytes are not 'GGUF')");
  HW_RETURN_IF_ERROR(c.read(&version_, "version"));
  if (version_ == 1)
    return unsupported(label_ + ": GGUF version 1 (32-bit counts) is not supported; versions 2 and 3 are");
  if (version_ != 2 && version_ != 3) {
    // A big-endian file's version reads byte-swapped (3 → 0x03000000).
    const bool swapped = version_ == 0x02000000u || version_ == 0x03000000u;
    return unsupported(label_ + ": GGUF version " + std::to_string(version_) +
                       (swapped ? " (a big-endian file; only little-endian GGUF is supported)"
                                : " is not supported; versions 2 and 3 are"));
  }
  uint64_t n_tensors = 0, n_kv = 0;
  HW_RETURN_IF_ERROR(c.read(&n_tensors, "tensor count"));
  HW_RETURN_IF_ERROR(c.read(&n_kv, "metadata count"));
  // A key/value takes ≥ 8 (key length) + 4 (type) + 1 bytes; a tensor info ≥ 8 + 4 + 4 + 8.
  if (n_kv > c.left() / 13)
    return format_error(label_ + ": header claims " + std::to_string(n_kv) +
                        " metadata entries; the file's " + std::to_string(c.left()) +
                        " remaining bytes cannot hold them");
  if (n_tensors > c.left() / 24)
    return format_error(label_ + ": header claims " + std::to_string(n_tensors) +
                        " tensors; the file's " + std::to_string(c.left()) +
                        " remaining bytes cannot hold them");

  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string_view key;
    HW_RETURN_IF_ERROR(c.string(&key, "metadata key #" + std::to_string(i)));
    const std::string k(key);
    if (kv_index_.count(k)) return format_error(label_ + ": key '" + k + "' appears twice");
    uint32_t t = 0;
    HW_RETURN_IF_ERROR(c.read(&t, "key '" + k + "' (value type)"));
    if (!known_type(t))
      return format_error(label_ + ": key '" + k + "': unknown value type " + std::to_string(t));
    GgufValue v;
    HW_RETURN_IF_ERROR(read_value(&c, static_cast<GgufType>(t), 0, label_, "key '" + k + "'", &v));
    kv_index_.emplace(k, kv_.size());
    kv_.emplace_back(k, std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    // llama.cpp writes it as u32; any integer type holding a power of two is accepted.
    if (!a->is_int() || a->type == GgufType::boolean)
      return format_error(label_ + ": key 'general.alignment' has type " + a->type_str() + ", not an integer");
    if (a->i <= 0 || a->i > (1 << 30) || (a->i & (a->i - 1)) != 0)
      return format_error(label_ + ": key 'general.alignment' is " + std::to_string(a->i) +
                          ", not a power of two in 1..2^30");
    alignment_ = static_cast<uint32_t>(a->i);
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    std::string_view name;
    HW_RETURN_IF_ERROR(c.string(&name, "tensor #" + std::to_string(i) + " name"));
    t.name = std::string(name);
    const std::string at = label_ + ": tensor '" + t.name + "': ";
    if (tensor_index_.count(t.name)) return format_error(at + "the name appears twice");
    uint32_t n_dims = 0;
    HW_RETURN_IF_ERROR(c.read(&n_dims, "tensor '" + t.name + "' dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims)
      return format_error(at + std::to_string(n_dims) + " dimensions (1.." + std::to_string(kMaxDims) + " allowed)");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = 0;
      HW_RETURN_IF_ERROR(c.read(&ne, "tensor '" + t.name + "' dimensions"));
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (ne != 0 && numel > std::numeric_limits<uint64_t>::max() / ne) ||
          numel * ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return format_error(at + "dimension " + std::to_string(d) + " (" + std::to_string(ne) +
                            ") makes the element count overflow");
      numel *= ne;
      t.ne.push_back(static_cast<int64_t>(ne));
    }
    HW_RETURN_IF_ERROR(c.read(&t.type, "tensor '" + t.name + "' type"));
    const GgmlTypeInfo ti = ggml_type_info(t.type);
    if (ti.name == nullptr) return format_error(at + "unknown ggml type " + std::to_string(t.type));
    if (t.ne[0] % ti.block != 0)
      return format_error(at + "first dimension " + std::to_string(t.ne[0]) + " is not a multiple of " +
                          ti.name + "'s block of " + std::to_string(ti.block));
    const uint64_t blocks = numel / static_cast<uint64_t>(ti.block);
    if (blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(ti.bytes))
      return format_error(at + "byte size overflows");
    t.nbytes = blocks * static_cast<uint64_t>(ti.bytes);
    HW_RETURN_IF_ERROR(c.read(&t.offset, "tensor '" + t.name + "' offset"));
    if (t.offset % alignment_ != 0)
      return format_error(at + "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                          std::to_string(alignment_));
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment (the padding may be
  // absent in a file without tensors).
  const uint64_t end_of_infos = c.pos();
  data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
  for (GgufTensor& t : tensors_) {
    // Compared by subtraction so that a huge offset cannot wrap around.
    if (data_offset_ > size_ || t.offset > size_ - data_offset_ ||
        t.nbytes > size_ - data_offset_ - t.offset)
      return format_error(label_ + ": tensor '" + t.name + "': " + std::to_string(t.nbytes) +
                          " bytes at data offset " + std::to_string(t.offset) +
                          " lie outside the file (" + std::to_string(size_) + " bytes; truncated?)");
    const uint64_t begin = data_offset_ + t.offset;
    t.data = data_ + begin;
  }
  return Status::Ok();
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::type_error(const std::string& key, const GgufValue& v, const char* want) const {
  return format_error(label_ + ": key '" + key + "' has type " + v.type_str() + ", expected " + want);
}

namespace {
Status missing(const std::string& label, const std::string& key) {
  return not_found(label + ": metadata key '" + key + "' is missing");
}
}  // namespace

Status GgufFile::get_i64(const std::string& key, int64_t* out) const {
  const GgufValue* v = find(key);
  if (!v) return missing(label_, key);
  if (!v->is_int() || v->type == GgufType::boolean) return type_error(key, *v, "an integer");
  if (v->type == GgufType::u64 && v->i < 0)
    return format_error(label_ + ": key '" + key + "' is too large for a signed 64-bit integer");
  *out = v->i;
  return Status::Ok();
}

Status GgufFile::get_u64(const std::string& key, uint64_t* out) const {
  const GgufValue* v = find(key);
  if (!v) return missing(label_, key);
  if (!v->is_int() || v->type == GgufType::boolean) return type_error(key, *v, "an integer");
  if (v->type != GgufType::u64 && v->i < 0)
    return format_error(label_ + ": key '" + key + "' is negative (" + std::to_string(v->i) + ")");
  *out = static_cast<uint64_t>(v->i);
  return Status::Ok();
}

Status GgufFile::get_u32(const std::string& key, uint32_t* out) const {
  uint64_t u = 0;
  HW_RETURN_IF_ERROR(get_u64(key, &u));
  if (u > std::numeric_limits<uint32_t>::max())
    return format_error(label_ + ": key '" + key + "' is " + std::to_string(u) + ", too large for 32 bits");
  *out = static_cast<uint32_t>(u);
  return Status::Ok();
}

Status GgufFile::get_f32(const std::string& key, float* out) const {
  const GgufValue* v = find(key);
  if (!v) return missing(label_, key);
  if (!v->is_float()) return type_error(key, *v, "f32 or f64");
  *out = static_cast<float>(v->f);
  return Status::Ok();
}

Status GgufFile::get_bool(const std::string& key, bool* out) const {
  const GgufValue* v = find(key);
  if (!v) return missing(label_, key);
  if (v->type != GgufType::boolean) return type_error(key, *v, "bool");
  *out = v->i != 0;
  return Status::Ok();
}

Status GgufFile::get_str(const std::string& key, std::string* out) const {
  const GgufValue* v = find(key);
  if (!v) return missing(label_, key);
  if (v->type != GgufType::string) return type_error(key, *v, "string");
  *out = std::string(v->str);
  return Status::Ok();
}

Status GgufFile::get_arr(const std::string& key, const GgufType* elem, const GgufValue** out) const {
  const GgufValue* v = find(key);
  if (!v) return missing(label_, key);
  if (v->type != GgufType::array) return type_error(key, *v, "an array");
  if (elem && v->elem != *elem)
    return type_error(key, *v, (std::string("array[") + gguf_type_name(*elem) + "]").c_str());
  *out = v;
  return Status::Ok();
}

Status GgufFile::opt_u32(const std::string& key, uint32_t* out) const {
  return has(key) ? get_u32(key, out) : Status::Ok();
}
Status GgufFile::opt_f32(const std::string& key, float* out) const {
  return has(key) ? get_f32(key, out) : Status::Ok();
}
Status GgufFile::opt_bool(const std::string& key, bool* out) const {
  return has(key) ? get_bool(key, out) : Status::Ok();
}
Status GgufFile::opt_str(const std::string& key, std::string* out) const {
  return has(key) ? get_str(key, out) : Status::Ok();
}

}  // namespace headwise::formats
