#include "formats/quantize_gguf.hpp"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>

#include "formats/gguf_write.hpp"
#include "graph/weights.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::formats {
namespace {

namespace hq = kernels::quant;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// llama.cpp's general.file_type values (llama_ftype) for the mixes; informational.
uint32_t file_type(const std::string& mix) {
  if (mix == "f16") return 1;
  if (mix == "q4_0") return 2;
  if (mix == "q8_0") return 7;
  if (mix == "q2_k") return 10;  // "Q2_K": llama.cpp's mix
  if (mix == "q3_k") return 11;  // "Q3_K_S": all Q3_K
  if (mix == "q3_k_m") return 12;
  if (mix == "q4_k") return 14;  // "Q4_K_S": all Q4_K
  if (mix == "q4_k_m") return 15;
  if (mix == "q5_k") return 16;  // "Q5_K_S": all Q5_K
  if (mix == "q5_k_m") return 17;
  if (mix == "q6_k") return 18;
  if (mix == "iq4_xs") return 30;
  if (mix == "bf16") return 32;
  return 0;
}

// Layer index of "blk.N.…", or −1.
int layer_of(const std::string& name) {
  if (name.compare(0, 4, "blk.") != 0) return -1;
  int n = 0;
  size_t i = 4;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && n < 1000000)
    n = n * 10 + (name[i++] - '0');
  return n;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Half of the layers get more bits under q4_k_m and q5_k_m: the first and last eighth (where
// errors matter most) and every third layer in between.
bool more_bits_layer(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

uint32_t type_id(hq::WType t) { return static_cast<uint32_t>(t); }

// The tensor's values as floats (any source type headwise reads).
Status to_floats(const GgufTensor& t, std::vector<float>* out) {
  const int64_t n = t.numel();
  out->resize(size_t(n));
  switch (t.type) {
    case kGgmlF32: std::memcpy(out->data(), t.data, size_t(n) * 4); return Status::Ok();
    case kGgmlF16: graph::to_f32(graph::DType::f16, t.data, size_t(n), out->data()); return Status::Ok();
    case kGgmlBF16: graph::to_f32(graph::DType::bf16, t.data, size_t(n), out->data()); return Status::Ok();
    default: break;
  }
  // The types read at load only (blocks of 32, back to back across rows).
  const auto lt = static_cast<hq::WType>(t.type);
  if (hq::load_only_block_bytes(lt) && !t.ne.empty() && t.ne[0] % hq::kLoadOnlyBlock == 0) {
    auto* fn = lt == hq::WType::q5_0   ? hq::dequantize_q5_0
               : lt == hq::WType::q4_1 ? hq::dequantize_q4_1
               : lt == hq::WType::q5_1 ? hq::dequantize_q5_1
                                       : hq::dequantize_iq4_nl;
    fn(t.data, out->data(), n);
    return Status::Ok();
  }
  const hq::TypeInfo* ti = hq::type_info(static_cast<hq::WType>(t.type));
  if (!ti || t.ne.empty() || t.ne[0] % ti->block != 0)
    return unsupported(std::string("tensor '") + t.name + "' has type " + t.type_name() +
                       ", which headwise cannot read (F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q5_0, "
                       "IQ4_NL, Q4_1, Q5_1)");
  const int64_t K = t.ne[0], rows = n / K;
  for (int64_t r = 0; r < rows; ++r) ti->dequantize(t.data + size_t(r) * hq::row_bytes(*ti, K), out->data() + r * K, K);
  return Status::Ok();
}

}  // namespace

bool valid_weight_mix(const std::string& mix) {
  const std::string m = lower(mix);
  return m == "f32" || m == "bf16" || m == "f16" || m == "q8_0" || m == "q4_0" || m == "q3_k" || m == "q4_k" || m == "q5_k" ||
         m == "q6_k" || m == "q3_k_m" || m == "q4_k_m" || m == "q5_k_m" || m == "iq4_xs" || m == "q2_k";
}

const char* weight_mixes_help() { return "f32|bf16|f16|q8_0|q4_0|q2_k|q3_k|q4_k|q5_k|q6_k|q3_k_m|q4_k_m|q5_k_m|iq4_xs"; }

uint32_t choose_tensor_type(const std::string& mix_in, const std::string& name, const std::vector<int64_t>& ne,
                            int n_layers, std::string* why, int n_gqa) {
  const std::string mix = lower(mix_in);
  if (ne.size() < 2 || contains(name, "rope_freqs")) return kGgmlF32;
  if (mix == "f32") {  // every matrix as its exact values: a quantized file's weights unrounded
    if (why) *why = "f32: exact values";
    return kGgmlF32;
  }
  // The 3-, 4- and 5-bit mixes keep the output matrix in Q6_K (llama.cpp does for every
  // K-quant mix).
  const bool low_bit = mix == "q4_0" || mix == "q3_k" || mix == "q3_k_m" || mix == "q4_k" || mix == "q4_k_m" ||
                       mix == "q5_k" || mix == "q5_k_m";
  hq::WType want;
  if (mix == "q3_k_m") {
    // llama.cpp's Q3_K_M: Q3_K, but attn_v in Q5_K for the first two layers and Q4_K
    // after; ffn_down in Q5_K for the first sixteenth of the layers and Q4_K after;
    // attn_output and a fused attn_qkv in Q4_K; the output matrix in Q6_K.
    want = hq::WType::q3_k;
    const int layer = layer_of(name);
    if (name == "output.weight") {
      want = hq::WType::q6_k;
      if (why) *why = "low-bit mix: output matrix in Q6_K";
    } else if (contains(name, "attn_v.") && layer >= 0) {
      want = layer < 2 ? hq::WType::q5_k : hq::WType::q4_k;
      if (why) *why = mix + ": more bits";
    } else if (contains(name, "ffn_down.") && layer >= 0) {
      want = layer < n_layers / 16 ? hq::WType::q5_k : hq::WType::q4_k;
      if (why) *why = mix + ": more bits";
    } else if (contains(name, "attn_output.") || contains(name, "attn_qkv.")) {
      want = hq::WType::q4_k;
      if (why) *why = mix + ": more bits";
    }
  } else if (mix == "q2_k") {
    // llama.cpp's Q2_K: Q2_K, but attn_v in Q4_K where 4 or more query heads share a key
    // head and Q3_K elsewhere, ffn_down and attn_output in Q3_K, the output matrix in Q6_K.
    want = hq::WType::q2_k;
    if (name == "output.weight") {
      want = hq::WType::q6_k;
      if (why) *why = "low-bit mix: output matrix in Q6_K";
    } else if (contains(name, "attn_v.") && layer_of(name) >= 0) {
      want = n_gqa >= 4 ? hq::WType::q4_k : hq::WType::q3_k;
      if (why) *why = mix + ": more bits";
    } else if ((contains(name, "ffn_down.") || contains(name, "attn_output.")) && layer_of(name) >= 0) {
      want = hq::WType::q3_k;
      if (why) *why = mix + ": more bits";
    }
  } else if (mix == "iq4_xs") {
    // llama.cpp's IQ4_XS without an importance matrix: IQ4_XS, but attn_v in Q5_K where
    // 4 or more query heads share a key head, ffn_down in Q5_K for the first eighth of
    // the layers, the output matrix in Q6_K.
    want = hq::WType::iq4_xs;
    const int layer = layer_of(name);
    if (name == "output.weight") {
      want = hq::WType::q6_k;
      if (why) *why = "low-bit mix: output matrix in Q6_K";
    } else if (contains(name, "attn_v.") && layer >= 0 && n_gqa >= 4) {
      want = hq::WType::q5_k;
      if (why) *why = mix + ": more bits (grouped-query attention)";
    } else if (contains(name, "ffn_down.") && layer >= 0 && layer < n_layers / 8) {
      want = hq::WType::q5_k;
      if (why) *why = mix + ": more bits";
    }
  } else if (mix == "q4_k_m" || mix == "q5_k_m") {
    want = mix == "q4_k_m" ? hq::WType::q4_k : hq::WType::q5_k;
    const int layer = layer_of(name);
    if (name == "output.weight" ||
        ((contains(name, "attn_v.") || contains(name, "ffn_down.")) && layer >= 0 && more_bits_layer(layer, n_layers))) {
      want = hq::WType::q6_k;
      if (why) *why = mix + ": more bits";
    } else if (contains(name, "attn_qkv.")) {  // fused q/k/v (GPT-2): one type up in every layer
      want = mix == "q4_k_m" ? hq::WType::q5_k : hq::WType::q6_k;
      if (why) *why = mix + ": more bits (fused qkv)";
    }
  } else {
    hq::parse_wtype(mix.c_str(), &want);
    if (low_bit && name == "output.weight") {
      want = hq::WType::q6_k;
      if (why) *why = "low-bit mix: output matrix in Q6_K";
    }
  }
  const int64_t K = ne[0];
  const int blk = hq::type_info(want)->block;
  if (K % blk == 0) return type_id(want);
  // Q2_K and Q3_K fall back to Q4_0 (as llama.cpp's), the other K-quants and IQ4_XS to Q8_0
  // (llama.cpp's Q5_0/Q5_1/IQ4_NL for Q4_K/Q5_K/IQ4_XS, which headwise reads but does not
  // write).
  const hq::WType fb = blk == 256 && K % 32 == 0 ? (want == hq::WType::q2_k || want == hq::WType::q3_k ? hq::WType::q4_0 : hq::WType::q8_0)
                                                 : hq::WType::f16;
  if (why) *why = "fallback: rows of " + std::to_string(K) + " are not a multiple of " + std::to_string(blk);
  return type_id(fb);
}

Status quantize_gguf(const GgufFile& in, const std::string& mix_in, const std::string& out, int threads,
                     QuantizeReport* report) {
  const std::string mix = lower(mix_in);
  if (!valid_weight_mix(mix))
    return invalid_argument("--weights '" + mix_in + "' is not one of " + weight_mixes_help());
  std::string arch;
  HW_RETURN_IF_ERROR(in.get_str("general.architecture", &arch));
  uint32_t n_layers = 0;
  HW_RETURN_IF_ERROR(in.get_u32(arch + ".block_count", &n_layers));
  // Query heads per key head (iq4_xs's attn_v rule); 1 where the file does not say.
  uint32_t heads = 0, kv_heads = 0;
  int n_gqa = 1;
  if (in.get_u32(arch + ".attention.head_count", &heads).ok() &&
      in.get_u32(arch + ".attention.head_count_kv", &kv_heads).ok() && kv_heads > 0 && heads >= kv_heads)
    n_gqa = int(heads / kv_heads);
  GgufWriter w(in.alignment());
  for (const auto& kv : in.metadata()) w.set_value(kv.first, kv.second);
  w.set_u32("general.file_type", file_type(mix));
  w.set_u32("general.quantization_version", 2);
  std::deque<std::vector<uint8_t>> buffers;  // alive until write()
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  for (const GgufTensor& t : in.tensors()) {
    std::string why;
    const uint32_t to = choose_tensor_type(mix, t.name, t.ne, int(n_layers), &why, n_gqa);
    QuantizeReport::Line line{t.name, t.type_name(), "", why};
    if (to == t.type || (to == kGgmlF32 && t.type != kGgmlF32 && t.ne.size() < 2)) {
      // unchanged (1-D tensors keep their type)
      HW_RETURN_IF_ERROR(w.add_tensor(t.name, t.type, t.ne, t.data, t.nbytes));
      line.to = line.from;
      if (report) report->bytes_in += t.nbytes, report->bytes_out += t.nbytes;
      if (report) report->tensors.push_back(line);
      continue;
    }
    std::vector<float> f;
    Status s = to_floats(t, &f);
    if (!s.ok()) return Status(s.code(), in.path() + ": " + s.message());
    const int64_t K = t.ne[0], rows = t.numel() / K;
    buffers.emplace_back();
    std::vector<uint8_t>& q = buffers.back();
    if (to == kGgmlF32) {
      q.resize(f.size() * 4);
      std::memcpy(q.data(), f.data(), q.size());
    } else {
      const hq::TypeInfo* ti = hq::type_info(static_cast<hq::WType>(to));
      const size_t rb = hq::row_bytes(*ti, K);
      q.resize(rb * size_t(rows));
#pragma omp parallel for num_threads(nt) schedule(dynamic, 16)
      for (int64_t r = 0; r < rows; ++r) ti->quantize(f.data() + r * K, q.data() + size_t(r) * rb, K);
    }
    HW_RETURN_IF_ERROR(w.add_tensor(t.name, to, t.ne, q.data(), q.size()));
    line.to = ggml_type_info(to).name ? ggml_type_info(to).name : "?";
    if (report) {
      report->bytes_in += t.nbytes;
      report->bytes_out += q.size();
      report->tensors.push_back(line);
    }
  }
  return w.write(out);
}

}  // namespace headwise::formats
