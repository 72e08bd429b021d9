// A Hugging Face folder as a model: config.json → ArchConfig; model.safetensors or the
// shards model.safetensors.index.json lists; generation_config.json's defaults.
#include <sys/stat.h>

#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "graph/input_file.hpp"
#include "graph/json_strict.hpp"
#include "formats/checkpoint.hpp"
#include "formats/hf_quantized.hpp"
#include "graph/rope_scaling.hpp"

namespace headwise::formats {
namespace {

using json = nlohmann::json;

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

Status read_json(const std::string& path, json* out) {
  // Regular files only, bounded in size; duplicate keys and deep nesting refused
  // (graph/json_strict.hpp).
  std::string text;
  HW_RETURN_IF_ERROR(graph::read_input_file(path, "JSON file", uint64_t(256) << 20, &text));
  HW_RETURN_IF_ERROR(graph::parse_json_strict(text.data(), text.data() + text.size(), path, out));
  if (!out->is_object()) return format_error(path + ": not a JSON object");
  return Status::Ok();
}

// Reads config fields with messages naming the file and key.
class Config {
 public:
  Config(const json& j, const std::string& path) : j_(j), path_(path) {}
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  Status int_field(const char* key, bool required, int* out, int64_t max = 1 << 24) const {
    if (!has(key)) return required ? format_error(path_ + ": missing field '" + key + "'") : Status::Ok();
    const json& v = j_.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > max)
      return format_error(path_ + ": field '" + key + "' must be an integer in 1.." + std::to_string(max));
    *out = static_cast<int>(v.get<int64_t>());
    return Status::Ok();
  }
  Status num_field(const char* key, bool required, double* out) const {
    if (!has(key)) return required ? format_error(path_ + ": missing field '" + key + "'") : Status::Ok();
    if (!j_.at(key).is_number()) return format_error(path_ + ": field '" + key + "' must be a number");
    *out = j_.at(key).get<double>();
    return Status::Ok();
  }
  Status bool_field(const char* key, bool* out) const {
    if (!has(key)) return Status::Ok();
    if (!j_.at(key).is_boolean()) return format_error(path_ + ": field '" + key + "' must be true or false");
    *out = j_.at(key).get<bool>();
    return Status::Ok();
  }
  Status str_field(const char* key, std::string* out) const {
    if (!has(key)) return Status::Ok();
    if (!j_.at(key).is_string()) return format_error(path_ + ": field '" + key + "' must be a string");
    *out = j_.at(key).get<std::string>();
    return Status::Ok();
  }
  // An id or a list of ids (eos_token_id).
  Status ids(const char* key, std::vector<int32_t>* out) const {
    if (!has(key)) return Status::Ok();
    const json& v = j_.at(key);
    std::vector<json> items = v.is_array() ? v.get<std::vector<json>>() : std::vector<json>{v};
    out->clear();
    for (const json& e : items) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > INT32_MAX)
        return format_error(path_ + ": field '" + key + "' must be a token id or a list of them");
      out->push_back(static_cast<int32_t>(e.get<int64_t>()));
    }
    return Status::Ok();
  }
  const json& at(const char* key) const { return j_.at(key); }

 private:
  const json& j_;
  const std::string& path_;
};

Status parse_config(const json& j, const std::string& path, ArchConfig* c) {
  Config cf(j, path);
  std::string type;
  HW_RETURN_IF_ERROR(cf.str_field("model_type", &type));
  if (type.empty()) return format_error(path + ": missing field 'model_type' (the architecture)");
  bool known = false;
  for (const std::string& a : supported_architectures()) known |= a == type;
  if (!known)
    return unsupported(path + ": architecture '" + type + "' (model_type) is not supported (supported: " +
                       supported_list() + ")");
  c->arch = type;
  graph::Settings& s = c->settings;
  if (type == "gpt2") {
    HW_RETURN_IF_ERROR(cf.int_field("n_embd", true, &s.d_model));
    HW_RETURN_IF_ERROR(cf.int_field("n_layer", true, &s.n_layers, 4096));
    HW_RETURN_IF_ERROR(cf.int_field("n_head", true, &s.n_heads, 4096));
    HW_RETURN_IF_ERROR(cf.int_field("n_positions", true, &s.max_seq_len));
    HW_RETURN_IF_ERROR(cf.int_field("vocab_size", true, &s.vocab_size));
    c->ffn_hidden = 4 * s.d_model;
    HW_RETURN_IF_ERROR(cf.int_field("n_inner", false, &c->ffn_hidden));
    double eps = 1e-5;
    HW_RETURN_IF_ERROR(cf.num_field("layer_norm_epsilon", false, &eps));
    s.norm_eps = static_cast<float>(eps);
    std::string act = "gelu_new";
    HW_RETURN_IF_ERROR(cf.str_field("activation_function", &act));
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
      return unsupported(path + ": activation_function '" + act + "' is not supported for gpt2 (gelu_new is)");
    if (s.d_model % s.n_heads != 0) return format_error(path + ": n_embd is not divisible by n_head");
    s.n_kv_heads = s.n_heads;
    s.head_dim = s.d_model / s.n_heads;
    c->tied = true;
    HW_RETURN_IF_ERROR(cf.bool_field("tie_word_embeddings", &c->tied));
    return Status::Ok();
  }
  // The Llama family (llama, mistral, qwen2, qwen3).
  HW_RETURN_IF_ERROR(cf.int_field("hidden_size", true, &s.d_model));
  HW_RETURN_IF_ERROR(cf.int_field("intermediate_size", true, &c->ffn_hidden));
  HW_RETURN_IF_ERROR(cf.int_field("num_hidden_layers", true, &s.n_layers, 4096));
  HW_RETURN_IF_ERROR(cf.int_field("num_attention_heads", true, &s.n_heads, 4096));
  HW_RETURN_IF_ERROR(cf.int_field("max_position_embeddings", true, &s.max_seq_len));
  HW_RETURN_IF_ERROR(cf.int_field("vocab_size", true, &s.vocab_size));
  s.n_kv_heads = s.n_heads;
  HW_RETURN_IF_ERROR(cf.int_field("num_key_value_heads", false, &s.n_kv_heads, 4096));
  if (s.n_heads % s.n_kv_heads != 0)
    return format_error(path + ": num_attention_heads is not a multiple of num_key_value_heads");
  s.head_dim = s.d_model % s.n_heads == 0 ? s.d_model / s.n_heads : 0;
  HW_RETURN_IF_ERROR(cf.int_field("head_dim", false, &s.head_dim, 256));
  if (s.head_dim == 0) return format_error(path + ": hidden_size is not divisible by num_attention_heads and no head_dim is given");
  double eps = 1e-6, theta = 10000;
  HW_RETURN_IF_ERROR(cf.num_field("rms_norm_eps", false, &eps));
  HW_RETURN_IF_ERROR(cf.num_field("rope_theta", false, &theta));
  if (!(eps > 0) || !(theta > 0)) return format_error(path + ": rms_norm_eps and rope_theta must be > 0");
  s.norm_eps = static_cast<float>(eps);
  s.rope_theta = static_cast<float>(theta);
  s.rope_style = kernels::RopeStyle::half;  // HF rotates half-split pairs (rotate_half)
  std::string act = "silu";
  HW_RETURN_IF_ERROR(cf.str_field("hidden_act", &act));
  if (act != "silu") return unsupported(path + ": hidden_act '" + act + "' is not supported (silu is)");
  c->tied = false;
  HW_RETURN_IF_ERROR(cf.bool_field("tie_word_embeddings", &c->tied));
  if (type == "llama" || type == "mistral") {
    HW_RETURN_IF_ERROR(cf.bool_field("attention_bias", &c->attn_bias));
    c->out_bias = c->attn_bias;
    HW_RETURN_IF_ERROR(cf.bool_field("mlp_bias", &c->mlp_bias));
  }
  if (type == "qwen3") {
    HW_RETURN_IF_ERROR(cf.bool_field("attention_bias", &c->attn_bias));
    c->out_bias = c->attn_bias;
  }
  // Sliding-window attention: with a context no longer than the window, every query
  // sees exactly the keys full attention sees, so the model is run with its context
  // capped at the window (exact, and no masking code needed).
  bool use_sw = type == "mistral";
  HW_RETURN_IF_ERROR(cf.bool_field("use_sliding_window", &use_sw));
  int window = 0;
  if (use_sw && cf.has("sliding_window")) {
    HW_RETURN_IF_ERROR(cf.int_field("sliding_window", true, &window));
    if (window < s.max_seq_len) s.max_seq_len = window;
  }
  if (cf.has("rope_scaling")) {
    const json& rs = cf.at("rope_scaling");
    if (!rs.is_object()) return format_error(path + ": field 'rope_scaling' must be an object or null");
    const std::string rtype = rs.contains("rope_type") && rs["rope_type"].is_string() ? rs["rope_type"].get<std::string>()
                              : rs.contains("type") && rs["type"].is_string()       ? rs["type"].get<std::string>()
                                                                                     : "";
    if (rtype == "default") {
    } else if (rtype == "llama3") {
      Config r(rs, path);
      double factor = 0, low = 0, high = 0, orig = 0;
      HW_RETURN_IF_ERROR(r.num_field("factor", true, &factor));
      HW_RETURN_IF_ERROR(r.num_field("low_freq_factor", true, &low));
      HW_RETURN_IF_ERROR(r.num_field("high_freq_factor", true, &high));
      HW_RETURN_IF_ERROR(r.num_field("original_max_position_embeddings", true, &orig));
      if (!(factor > 0) || !(low > 0) || !(high > low) || !(orig > 0))
        return format_error(path + ": rope_scaling (llama3) needs factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0");
      s.rope_freq_factors = graph::llama3_rope_freq_factors(theta, s.head_dim, factor, low, high, orig);
    } else {
      return unsupported(path + ": rope_scaling type '" + rtype + "' is not supported ('llama3' is)");
    }
  }
  return Status::Ok();
}

struct Shards {
  std::vector<std::unique_ptr<graph::SafetensorsFile>> files;
  std::deque<std::vector<uint8_t>> reencoded;  // GPTQ/AWQ layers as blocks (hf_quantized.hpp)
};

Status open_weights(const std::string& dir, Shards* shards) {
  const std::string single = dir + "/model.safetensors";
  const std::string index = dir + "/model.safetensors.index.json";
  if (exists(single)) {
    shards->files.emplace_back();
    return graph::SafetensorsFile::open(single, &shards->files.back());
  }
  if (!exists(index))
    return not_found(dir + ": holds neither model.safetensors nor model.safetensors.index.json");
  json j;
  HW_RETURN_IF_ERROR(read_json(index, &j));
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    return format_error(index + ": missing object 'weight_map'");
  std::map<std::string, std::vector<std::string>> by_file;  // shard → tensors it should hold
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) return format_error(index + ": weight_map['" + it.key() + "'] is not a file name");
    const std::string file = it.value().get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
      return format_error(index + ": weight_map['" + it.key() + "'] names '" + file + "', not a file in the folder");
    by_file[file].push_back(it.key());
  }
  for (const auto& [file, names] : by_file) {
    const std::string p = dir + "/" + file;
    if (!exists(p))
      return not_found(p + ": shard missing (listed in " + index + " for tensor '" + names[0] + "')");
    shards->files.emplace_back();
    HW_RETURN_IF_ERROR(graph::SafetensorsFile::open(p, &shards->files.back()));
    for (const std::string& n : names)
      if (!shards->files.back()->find(n))
        return format_error(p + ": tensor '" + n + "' is listed for this shard in " + index + " but is not in it");
  }
  return Status::Ok();
}

}  // namespace

bool is_hf_folder(const std::string& dir) { return exists(dir + "/config.json"); }

Status load_hf_checkpoint(const std::string& dir, Checkpoint* out) {
  const std::string config_path = dir + "/config.json";
  json cj;
  HW_RETURN_IF_ERROR(read_json(config_path, &cj));
  ArchConfig c;
  HW_RETURN_IF_ERROR(parse_config(cj, config_path, &c));
  HfQuantConfig quant;
  if (cj.contains("quantization_config") && !cj["quantization_config"].is_null()) {
    HW_RETURN_IF_ERROR(parse_hf_quant_config(cj["quantization_config"], config_path, &quant));
    if (c.arch == "gpt2")
      return unsupported(config_path + ": GPTQ/AWQ weights are supported for the Llama family, not gpt2");
  }

  auto shards = std::make_shared<Shards>();
  HW_RETURN_IF_ERROR(open_weights(dir, shards.get()));
  // GPT-2 checkpoints saved from GPT2LMHeadModel carry a "transformer." prefix.
  if (c.arch == "gpt2")
    for (const auto& f : shards->files)
      if (f->find("transformer.wte.weight")) c.hf_prefix = "transformer.";
  std::vector<graph::TensorView> views;
  std::set<std::string> seen;
  for (const auto& f : shards->files)
    for (const graph::TensorView& t : f->tensors()) {
      if (ignorable_tensor(c, Naming::hf, t.name)) continue;
      if (!seen.insert(t.name).second)
        return format_error(f->path() + ": tensor '" + t.name + "' also appears in another shard");
      views.push_back(t);
    }
  if (quant.method != HfQuantConfig::Method::none) {
    uint64_t files_bytes = 0;
    for (const auto& f : shards->files) files_bytes += f->file_size();
    HW_RETURN_IF_ERROR(convert_hf_quantized(quant, dir, 2 * files_bytes, &views, &shards->reencoded));
  }

  Checkpoint& ck = *out;
  ck.config = c;
  HW_RETURN_IF_ERROR(describe(c, Naming::hf, config_path, &ck.desc));
  ck.desc.name = dir.substr(dir.find_last_of('/') + 1);
  ck.weights = graph::WeightSet::external(std::move(views), shards, dir);

  HW_RETURN_IF_ERROR(Config(cj, config_path).ids("eos_token_id", &ck.eos_ids));
  const std::string gen_path = dir + "/generation_config.json";
  if (exists(gen_path)) {
    json gj;
    HW_RETURN_IF_ERROR(read_json(gen_path, &gj));
    Config g(gj, gen_path);
    HW_RETURN_IF_ERROR(g.ids("eos_token_id", &ck.eos_ids));
    double t = -1, p = -1;
    HW_RETURN_IF_ERROR(g.num_field("temperature", false, &t));
    HW_RETURN_IF_ERROR(g.num_field("top_p", false, &p));
    bool do_sample = true;
    HW_RETURN_IF_ERROR(g.bool_field("do_sample", &do_sample));
    ck.temperature = do_sample ? static_cast<float>(t) : 0.0f;  // greedy when do_sample is false
    ck.top_p = static_cast<float>(p);
  }
  for (int32_t id : ck.eos_ids)
    if (id >= c.settings.vocab_size)
      return format_error(config_path + ": eos_token_id " + std::to_string(id) + " is outside the vocabulary");
  if (exists(dir + "/tokenizer.json")) ck.tokenizer_json = dir + "/tokenizer.json";
  return Status::Ok();
}

}  // namespace headwise::formats
