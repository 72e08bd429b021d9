// Hugging Face GPTQ and AWQ weights as blocks headwise multiplies natively (see the header).
#include "formats/hf_quantized.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <new>

#include "kernels/quant/blocks.hpp"

namespace headwise::formats {
namespace {

namespace q = kernels::quant;
using json = nlohmann::json;

// AWQ's packing: output column 8c + j of an int32 lies in its nibble kAwqNibble[j].
constexpr int kAwqNibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};
// Output rows re-encoded together: their packed k-rows are read as runs of 64 columns.
constexpr int64_t kRowChunk = 64;

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

uint32_t u32_at(const uint8_t* p, int64_t i) {
  uint32_t v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}

struct Layer {
  const graph::TensorView *qweight = nullptr, *qzeros = nullptr, *scales = nullptr, *g_idx = nullptr;
};

// One layer's integers, unpacked on demand: q(k, n), zero(g, n), the scale's f16 bits.
struct Packed {
  const HfQuantConfig& cfg;
  const Layer& l;
  int64_t K, N;
  uint32_t mask;
  int f;  // values per int32
  uint32_t q(int64_t k, int64_t n) const {
    if (cfg.method == HfQuantConfig::Method::gptq)
      return (u32_at(l.qweight->data, (k / f) * N + n) >> (cfg.bits * (k % f))) & mask;
    return (u32_at(l.qweight->data, k * (N / 8) + n / 8) >> (4 * kAwqNibble[n % 8])) & mask;
  }
  int zero(int64_t g, int64_t n) const {
    const uint32_t z = cfg.method == HfQuantConfig::Method::gptq
                           ? (u32_at(l.qzeros->data, g * (N / f) + n / f) >> (cfg.bits * (n % f))) & mask
                           : (u32_at(l.qzeros->data, g * (N / 8) + n / 8) >> (4 * kAwqNibble[n % 8])) & mask;
    return int(z) + (cfg.zeros_less_one ? 1 : 0);
  }
  uint16_t scale(int64_t g, int64_t n) const {
    uint16_t s;
    std::memcpy(&s, l.scales->data + 2 * (g * N + n), 2);
    return s;
  }
};

std::string shape_of(const graph::TensorView* t) { return t->shape_str(); }

Status convert_layer(const HfQuantConfig& cfg, const std::string& dir, const std::string& p, const Layer& l,
                     uint64_t budget, uint64_t* used, std::deque<std::vector<uint8_t>>* owned,
                     graph::TensorView* out) {
  const std::string at = dir + ": layer '" + p + "': ";
  for (auto [t, what] : {std::pair{l.qweight, "qweight"}, {l.qzeros, "qzeros"}, {l.scales, "scales"}})
    if (!t) return format_error(at + "tensor '" + p + "." + what + "' is missing (a GPTQ/AWQ layer has qweight, qzeros and scales)");
  auto need = [&](const graph::TensorView* t, graph::DType dt, size_t dims) -> Status {
    if (t->dtype != dt || t->shape.size() != dims)
      return format_error(at + "tensor '" + t->name + "' is " + graph::dtype_name(t->dtype) + " " + shape_of(t) +
                          "; expected " + graph::dtype_name(dt) + " with " + std::to_string(dims) + " dimensions");
    return Status::Ok();
  };
  HW_RETURN_IF_ERROR(need(l.qweight, graph::DType::i32, 2));
  HW_RETURN_IF_ERROR(need(l.qzeros, graph::DType::i32, 2));
  HW_RETURN_IF_ERROR(need(l.scales, graph::DType::f16, 2));
  if (l.g_idx) HW_RETURN_IF_ERROR(need(l.g_idx, graph::DType::i32, 1));
  const bool gptq = cfg.method == HfQuantConfig::Method::gptq;
  const int f = 32 / cfg.bits;
  const int zf = gptq ? f : 8;  // qzeros' values per int32 along N
  const int64_t K = gptq ? l.qweight->shape[0] * f : l.qweight->shape[0];
  const int64_t N = gptq ? l.qweight->shape[1] : l.qweight->shape[1] * 8;
  if (K < 1 || N < 1 || K % q::kQK != 0 || N % zf != 0)
    return unsupported(at + "qweight " + shape_of(l.qweight) + " holds a " + std::to_string(N) + "x" +
                       std::to_string(K) + " weight; headwise needs the input size K a multiple of 32 and the "
                       "output size N of " + std::to_string(zf));
  const int64_t G = l.scales->shape[0];
  const int64_t G_expect = cfg.group_size > 0 ? (K + cfg.group_size - 1) / cfg.group_size : 1;
  if (l.scales->shape[1] != N || (!l.g_idx && G != G_expect) || G < 1)
    return format_error(at + "scales " + shape_of(l.scales) + " do not fit qweight " + shape_of(l.qweight) + " (expected [" +
                        std::to_string(G_expect) + ", " + std::to_string(N) + "] for group_size " +
                        std::to_string(cfg.group_size) + ")");
  // A scale that is not a finite f16 would make every product of its column NaN or ±inf.
  for (int64_t i = 0; i < G * N; ++i) {
    uint16_t s;
    std::memcpy(&s, l.scales->data + 2 * i, 2);
    if ((s & 0x7C00) == 0x7C00)
      return format_error(at + "scales[" + std::to_string(i / N) + "][" + std::to_string(i % N) +
                          "] is not a finite number");
  }
  if (l.qzeros->shape[0] != G || l.qzeros->shape[1] != N / zf)
    return format_error(at + "qzeros " + shape_of(l.qzeros) + " do not fit scales " + shape_of(l.scales) + " (expected [" +
                        std::to_string(G) + ", " + std::to_string(N / zf) + "])");
  if (l.g_idx && l.g_idx->shape[0] != K)
    return format_error(at + "g_idx " + shape_of(l.g_idx) + " does not have the " + std::to_string(K) + " input rows");
  // The group of each input row; each block of 32 rows must lie in one group (its
  // values' scale and zero). An act-order file (g_idx) whose groups interleave the rows
  // has its columns stored sorted by group, stably (`order`: stored column j is column
  // order[j]), and its products gather their inputs in that order (TensorView::perm).
  std::vector<int32_t> gk(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) {
    const int64_t g = l.g_idx ? int64_t(int32_t(u32_at(l.g_idx->data, k))) : (cfg.group_size > 0 ? k / cfg.group_size : 0);
    if (g < 0 || g >= G)
      return format_error(at + "g_idx[" + std::to_string(k) + "] = " + std::to_string(g) + " is outside the " +
                          std::to_string(G) + " groups");
    gk[size_t(k)] = int32_t(g);
  }
  std::vector<int32_t> order(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) order[size_t(k)] = int32_t(k);
  bool in_runs = true;
  for (int64_t k = 0; k < K && in_runs; ++k) in_runs = gk[size_t(k)] == gk[size_t(k - k % q::kQK)];
  if (!in_runs)
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return gk[size_t(a)] < gk[size_t(b)]; });
  std::vector<int32_t> group(static_cast<size_t>(K / q::kQK));
  for (int64_t b = 0; b < K / q::kQK; ++b) {
    group[size_t(b)] = gk[size_t(order[size_t(b * q::kQK)])];
    for (int64_t j = b * q::kQK; j < (b + 1) * q::kQK; ++j)
      if (gk[size_t(order[size_t(j)])] != group[size_t(b)])
        return unsupported(at + "g_idx's groups hold numbers of input rows that are not multiples of 32 (rows " +
                           std::to_string(b * q::kQK) + ".." + std::to_string(j) + " of the rows sorted by group "
                           "straddle two); headwise multiplies blocks of 32 with one scale");
  }
  const Packed pk{cfg, l, K, N, cfg.bits == 4 ? 0xFu : 0xFFu, f};
  const int center = cfg.bits == 4 ? 8 : 128;
  bool centered = true;
  for (int64_t g = 0; g < G && centered; ++g)
    for (int64_t n = 0; n < N && centered; ++n) centered = pk.zero(g, n) == center;
  const graph::DType dt = cfg.bits == 4 ? (centered ? graph::DType::q4_0 : graph::DType::q4_0c)
                                         : (centered ? graph::DType::q8_0 : graph::DType::q8_0c);
  const size_t row = graph::dtype_row_bytes(dt, K), bytes = row * size_t(N);
  *used += bytes;
  if (*used > budget)
    return format_error(at + "the re-encoded layers' " + std::to_string(*used) + " bytes exceed twice the files' " +
                        std::to_string(budget / 2) + " (tensors overlap)");
  try {
    owned->emplace_back(bytes);
  } catch (const std::bad_alloc&) {
    return out_of_memory(at + "no memory for its " + std::to_string(bytes) + " bytes as " + graph::dtype_name(dt));
  }
  uint8_t* dst = owned->back().data();
  const int64_t kb = K / q::kQK;
#pragma omp parallel for schedule(dynamic)
  for (int64_t n0 = 0; n0 < N; n0 += kRowChunk)
    for (int64_t b = 0; b < kb; ++b)
      for (int64_t n = n0; n < std::min(N, n0 + kRowChunk); ++n) {
        const int64_t g = group[size_t(b)], k0 = b * q::kQK;
        const uint16_t d = pk.scale(g, n);
        const int z = pk.zero(g, n);
        uint8_t* blk = dst + size_t(n) * row + size_t(b) * (row / size_t(kb));
        q::BlockQ4_0* b4 = reinterpret_cast<q::BlockQ4_0*>(blk);
        q::BlockQ8_0* b8 = reinterpret_cast<q::BlockQ8_0*>(blk);
        if (cfg.bits == 4) {
          b4->d = d;
          for (int j = 0; j < q::kQK / 2; ++j)
            b4->q[j] = uint8_t(pk.q(order[size_t(k0 + j)], n) | pk.q(order[size_t(k0 + j + q::kQK / 2)], n) << 4);
        } else {
          b8->d = d;
          for (int j = 0; j < q::kQK; ++j) b8->q[j] = int8_t(int(pk.q(order[size_t(k0 + j)], n)) - center);
        }
        if (!centered) {
          // d·(center − z): an f16 times |center − z| ≤ 128, exact in f32.
          const float c = q::half_to_f32(d) * float(center - z);
          std::memcpy(blk + (cfg.bits == 4 ? sizeof(q::BlockQ4_0) : sizeof(q::BlockQ8_0)), &c, 4);
        }
      }
  out->name = p + ".weight";
  out->dtype = dt;
  out->shape = {N, K};
  out->data = dst;
  out->nbytes = bytes;
  if (!in_runs) {  // the order, kept with the blocks (a buffer of its own: int32-aligned)
    try {
      owned->emplace_back(size_t(K) * 4);
    } catch (const std::bad_alloc&) {
      return out_of_memory(at + "no memory for its column order");
    }
    std::memcpy(owned->back().data(), order.data(), size_t(K) * 4);
    out->perm = reinterpret_cast<const int32_t*>(owned->back().data());
  }
  return Status::Ok();
}

}  // namespace

Status parse_hf_quant_config(const json& qc, const std::string& path, HfQuantConfig* out) {
  const std::string at = path + ": quantization_config";
  if (!qc.is_object()) return format_error(at + " must be an object");
  auto str = [&](const char* key, std::string* v) -> Status {
    if (!qc.contains(key) || qc[key].is_null()) return Status::Ok();
    if (!qc[key].is_string()) return format_error(at + "." + key + " must be a string");
    *v = qc[key].get<std::string>();
    return Status::Ok();
  };
  auto integer = [&](std::initializer_list<const char*> keys, int* v) -> Status {
    for (const char* key : keys) {
      if (!qc.contains(key) || qc[key].is_null()) continue;
      if (!qc[key].is_number_integer() || qc[key].get<int64_t>() < -1 || qc[key].get<int64_t>() > (1 << 24))
        return format_error(at + "." + key + " must be an integer");
      *v = int(qc[key].get<int64_t>());
      return Status::Ok();
    }
    return format_error(at + ": missing field '" + *keys.begin() + "'");
  };
  std::string method;
  HW_RETURN_IF_ERROR(str("quant_method", &method));
  HfQuantConfig c;
  if (method == "gptq") {
    c.method = HfQuantConfig::Method::gptq;
    HW_RETURN_IF_ERROR(integer({"bits"}, &c.bits));
    HW_RETURN_IF_ERROR(integer({"group_size"}, &c.group_size));
    std::string format = "gptq";
    HW_RETURN_IF_ERROR(str("checkpoint_format", &format));
    if (format != "gptq" && format != "gptq_v2")
      return unsupported(at + ".checkpoint_format '" + format + "' is not supported (gptq and gptq_v2 are)");
    c.zeros_less_one = format == "gptq";
    if (c.bits != 4 && c.bits != 8)
      return unsupported(at + ".bits " + std::to_string(c.bits) + ": GPTQ weights of 4 and 8 bits are supported");
  } else if (method == "awq") {
    c.method = HfQuantConfig::Method::awq;
    HW_RETURN_IF_ERROR(integer({"bits", "w_bit"}, &c.bits));
    HW_RETURN_IF_ERROR(integer({"group_size", "q_group_size"}, &c.group_size));
    std::string version = "gemm";
    HW_RETURN_IF_ERROR(str("version", &version));
    for (char& ch : version) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (version != "gemm")
      return unsupported(at + ".version '" + version + "' is not supported (AWQ's gemm packing is)");
    if (qc.contains("zero_point") && !(qc["zero_point"].is_boolean() && qc["zero_point"].get<bool>()))
      return unsupported(at + ".zero_point: AWQ weights without zero points are not supported");
    if (c.bits != 4) return unsupported(at + ".bits " + std::to_string(c.bits) + ": AWQ weights of 4 bits are supported");
  } else {
    return unsupported(at + ".quant_method '" + method + "' is not supported (gptq and awq are; GGUF files hold "
                       "the other quantized types)");
  }
  if (c.group_size != -1 && (c.group_size <= 0 || c.group_size % q::kQK != 0))
    return unsupported(at + ".group_size " + std::to_string(c.group_size) +
                       ": groups must be whole blocks of 32 input rows (or -1, one group per column)");
  *out = c;
  return Status::Ok();
}

Status convert_hf_quantized(const HfQuantConfig& cfg, const std::string& dir, uint64_t budget,
                            std::vector<graph::TensorView>* views, std::deque<std::vector<uint8_t>>* owned) {
  const std::vector<graph::TensorView> in = std::move(*views);
  views->clear();
  std::map<std::string, Layer> layers;  // prefix → its tensors
  for (const graph::TensorView& t : in) {
    bool taken = false;
    for (auto [suffix, field] : {std::pair{".qweight", &Layer::qweight}, {".qzeros", &Layer::qzeros},
                                 {".scales", &Layer::scales}, {".g_idx", &Layer::g_idx}})
      if (ends_with(t.name, suffix)) {
        layers[t.name.substr(0, t.name.size() - strlen(suffix))].*field = &t;
        taken = true;
      }
    if (!taken) views->push_back(t);
  }
  uint64_t used = 0;
  for (const auto& [p, l] : layers) {
    graph::TensorView v;
    HW_RETURN_IF_ERROR(convert_layer(cfg, dir, p, l, budget, &used, owned, &v));
    for (const graph::TensorView& t : *views)
      if (t.name == v.name)
        return format_error(dir + ": layer '" + p + "' has both a quantized weight (qweight) and '" + v.name + "'");
    views->push_back(std::move(v));
  }
  return Status::Ok();
}

}  // namespace headwise::formats
