// Synthetic models: the presets of graph/presets.hpp filled with seeded random
// weights, generated in parallel but independent of the thread count (each 1M-float
// chunk has its own generator, seeded from the model seed, the tensor and the chunk).
#include <omp.h>

#include <cctype>
#include <cmath>
#include <deque>
#include <map>

#include "graph/plan.hpp"
#include "graph/presets.hpp"
#include "headwise/model.hpp"
#include "formats/llama2c_to_gguf.hpp"
#include "formats/quantize_gguf.hpp"
#include "kernels/quant/quant.hpp"
#include "runtime/model_builder.hpp"
#include "runtime/synthetic.hpp"
#include "runtime/splitmix64.hpp"

namespace headwise {

namespace {

// Uniform in [−a, a]: a = √3/√fan_in gives unit-variance outputs for unit inputs;
// norm gains are 1 and biases small.
void fill(const graph::TensorSpec& t, uint64_t seed, size_t index, std::vector<float>* out) {
  size_t n = 1;
  for (int64_t d : t.shape) n *= size_t(d);
  out->resize(n);
  if (t.fan_in == 0) {
    std::fill(out->begin(), out->end(), 1.0f);
    return;
  }
  const float a = t.bias ? 0.02f : std::sqrt(3.0f / float(t.fan_in));
  constexpr size_t kChunk = size_t(1) << 20;
  const int64_t chunks = int64_t((n + kChunk - 1) / kChunk);
  float* p = out->data();
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    uint64_t s = splitmix64(seed ^ splitmix64(index * 0x100000001B3ull + uint64_t(c)));
    const size_t end = std::min(n, size_t(c + 1) * kChunk);
    for (size_t i = size_t(c) * kChunk; i < end; ++i) {
      s = splitmix64(s);
      p[i] = a * (float((s >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f);
    }
  }
}

// A character-level vocabulary for the built-in demo model: the llama2.c special and
// byte-fallback pieces, then printable ASCII and " a" .. " z".
std::unique_ptr<Tokenizer> builtin_tokenizer() {
  std::vector<std::string> pieces = {"<unk>", "<s>", "\n</s>\n"};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    pieces.push_back(buf);
  }
  for (int c = 32; c < 127; ++c) pieces.push_back(std::string(1, char(c)));
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(std::string(" ") + c);
  std::vector<float> scores(pieces.size(), 0.0f);
  for (size_t i = 259; i < pieces.size(); ++i) scores[i] = -float(i);
  return Tokenizer::from_pieces(std::move(pieces), std::move(scores));
}

// The matrices of `views` (llama names) in the types quantize_gguf chooses under `mix`;
// each quantized tensor replaces its f32 data in `data` (views[i] points into data[i]).
Status quantize_matrices(const std::string& mix, int n_layers, int n_gqa, std::vector<graph::TensorView>* views,
                         std::deque<std::vector<float>>* data, std::string* types) {
  namespace hq = kernels::quant;
  std::map<std::string, int> count;
  for (size_t i = 0; i < views->size(); ++i) {
    graph::TensorView& v = (*views)[i];
    if (v.shape.size() != 2) continue;  // norms stay f32
    const std::string gguf = formats::llama_gguf_tensor_name(v.name);
    if (gguf.empty())
      return invalid_argument("--weights: tensor '" + v.name +
                              "' has no llama (GGUF) name; --weights applies to the llama synthetic models");
    const int64_t K = v.shape[1], N = v.shape[0];  // [N][K] rows, as GGUF's ne = {K, N}
    const auto wt = static_cast<hq::WType>(formats::choose_tensor_type(mix, gguf, {K, N}, n_layers, nullptr, n_gqa));
    const hq::TypeInfo* ti = hq::type_info(wt);
    graph::DType dt = graph::DType::f32;
    for (graph::DType d : {graph::DType::f16, graph::DType::bf16, graph::DType::q8_0, graph::DType::q4_0,
                           graph::DType::q3_k, graph::DType::q4_k, graph::DType::q5_k, graph::DType::q6_k,
                           graph::DType::iq4_xs, graph::DType::q2_k})
      if (graph::dtype_quant_type(d) == wt) dt = d;
    if (!ti || dt == graph::DType::f32) {
      ++count["f32"];
      continue;
    }
    const size_t rb = hq::row_bytes(*ti, K), bytes = rb * size_t(N);
    std::vector<float> q((bytes + sizeof(float) - 1) / sizeof(float));
    const float* src = reinterpret_cast<const float*>(v.data);
    auto* dst = reinterpret_cast<uint8_t*>(q.data());
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t n = 0; n < N; ++n) ti->quantize(src + n * K, dst + size_t(n) * rb, K);
    (*data)[i] = std::move(q);  // frees the f32 copy
    v.data = reinterpret_cast<const uint8_t*>((*data)[i].data());
    v.dtype = dt;
    v.nbytes = bytes;
    std::string tn = graph::dtype_name(dt);
    for (char& c : tn) c = char(std::tolower(static_cast<unsigned char>(c)));  // as --weights spells it
    ++count[tn];
  }
  if (types) {
    types->clear();
    for (const auto& [t, n] : count) *types += (types->empty() ? "" : ", ") + t + " ×" + std::to_string(n);
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> Model::synthetic_names() {
  return {"gpt2-small", "llama-134m", "llama-1b-like", "llama-7b-1layer", "tiny"};
}

Status Model::synthetic(const std::string& name, uint64_t seed, std::shared_ptr<const Model>* out) {
  return synthetic_model(name, seed, "", out);
}

Status synthetic_model(const std::string& name, uint64_t seed, const std::string& mix,
                       std::shared_ptr<const Model>* out, std::string* types) {
  graph::Settings s;
  graph::Preset p;
  std::unique_ptr<Tokenizer> tok;
  auto llama = [&](int vocab, int d, int layers, int heads, int kv, int hidden, int ctx, bool tied) {
    s.vocab_size = vocab;
    s.d_model = d;
    s.n_layers = layers;
    s.n_heads = heads;
    s.n_kv_heads = kv;
    s.head_dim = d / heads;
    s.max_seq_len = ctx;
    p = graph::llama_preset(s, hidden, tied, name);
  };
  if (name == "gpt2-small") {
    s.vocab_size = 50257;
    s.d_model = 768;
    s.n_layers = 12;
    s.n_heads = s.n_kv_heads = 12;
    s.head_dim = 64;
    s.max_seq_len = 1024;
    s.norm_eps = 1e-5f;
    p = graph::gpt2_preset(s, name);
  } else if (name == "llama-134m") {
    llama(32000, 768, 12, 12, 12, 2048, 2048, false);
  } else if (name == "llama-1b-like") {
    llama(32000, 2048, 16, 32, 8, 8192, 2048, false);
  } else if (name == "llama-7b-1layer") {
    llama(32000, 4096, 1, 32, 32, 11008, 2048, false);
  } else if (name == "tiny") {
    tok = builtin_tokenizer();
    llama(tok->vocab_size(), 64, 2, 4, 2, 172, 256, true);
  } else {
    std::string names;
    for (const std::string& n : Model::synthetic_names()) names += (names.empty() ? "" : ", ") + n;
    return invalid_argument("unknown synthetic model '" + name + "' (known: " + names + ")");
  }
  std::deque<std::vector<float>> data;
  std::vector<graph::TensorView> views;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const graph::TensorSpec& t = p.tensors[i];
    data.emplace_back();
    fill(t, seed, i, &data.back());
    graph::TensorView v;
    v.name = t.name;
    v.dtype = graph::DType::f32;
    v.shape = t.shape;
    v.data = reinterpret_cast<const uint8_t*>(data.back().data());
    v.nbytes = data.back().size() * sizeof(float);
    views.push_back(std::move(v));
  }
  if (!mix.empty()) {
    if (!formats::valid_weight_mix(mix))
      return invalid_argument("--weights '" + mix + "' is not one of " + formats::weight_mixes_help());
    HW_RETURN_IF_ERROR(quantize_matrices(mix, s.n_layers, s.n_kv_heads > 0 ? s.n_heads / s.n_kv_heads : 1, &views, &data, types));
  }
  const std::string label = "synthetic:" + name + " (seeded random weights, seed " + std::to_string(seed) +
                            (mix.empty() ? "" : ", " + mix + " weights") + ")";
  p.desc.path = label;
  return ModelBuilder::finish(p.desc, graph::WeightSet::in_memory(std::move(views), std::move(data), label),
                              std::move(tok), label, out);
}

}  // namespace headwise
