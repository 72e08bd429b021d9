// Model::load: description (or llama2.c checkpoint) → checked graph → plan; the
// tokenizer; and the numbers ModelInfo reports.
#include <sys/stat.h>

#include <algorithm>

#include "formats/checkpoint.hpp"
#include "graph/presets.hpp"
#include "graph/plan.hpp"
#include "headwise/model.hpp"
#include "runtime/model_builder.hpp"
#include "runtime/session_buffers.hpp"
#include "runtime/session_memory.hpp"
#include "runtime/tokenizer_load.hpp"

namespace headwise {
namespace {

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  return base.substr(0, base.find_last_of('.'));
}

}  // namespace

Model::~Model() = default;

Status ModelBuilder::finish(const graph::ModelDesc& desc, std::unique_ptr<graph::WeightSet> weights,
                            std::unique_ptr<Tokenizer> tokenizer, const std::string& source,
                            std::shared_ptr<const Model>* out) {
  auto model = std::shared_ptr<Model>(new Model);
  const graph::Settings settings = desc.settings;
  graph::Graph g;
  HW_RETURN_IF_ERROR(graph::build_graph(desc, std::move(weights), &g));
  HW_RETURN_IF_ERROR(graph::build_plan(std::move(g), &model->plan_));
  model->tokenizer_ = std::move(tokenizer);
  // Checkpoints may pad the embedding beyond the tokenizer's ids (Qwen: 151936 rows for
  // 151665 tokens); a tokenizer with ids the model lacks is an error.
  if (model->tokenizer_ && model->tokenizer_->vocab_size() > settings.vocab_size)
    return invalid_argument(source + ": the tokenizer has " + std::to_string(model->tokenizer_->vocab_size()) +
                            " pieces but the model's vocabulary is " + std::to_string(settings.vocab_size));
  ModelInfo& info = model->info_;
  info.name = desc.name;
  info.source = source;
  info.vocab_size = settings.vocab_size;
  info.d_model = settings.d_model;
  info.n_layers = settings.n_layers;
  info.n_heads = settings.n_heads;
  info.n_kv_heads = settings.n_kv_heads;
  info.head_dim = settings.head_dim;
  info.max_seq_len = settings.max_seq_len;
  const graph::Plan& plan = *model->plan_;
  info.weight_bytes = plan.packed_weight_bytes;
  for (const graph::Node& n : plan.graph.nodes) {
    if (n.op == graph::OpKind::linear || n.op == graph::OpKind::logits) continue;
    if (n.w) info.weight_bytes += size_t(n.w_rows * n.w_cols) * sizeof(float);
    if (n.wq) info.weight_bytes += graph::dtype_row_bytes(n.wq_type, n.w_cols) * size_t(n.w_rows);
  }
  info.activation_floats_per_row = plan.graph.arena_cols;
  info.kv_bytes_per_token = size_t(plan.graph.kv_slots) * 2 * plan.kv_width() * sizeof(float);
  *out = std::move(model);
  return Status::Ok();
}

// A GGUF file or a Hugging Face folder (formats/checkpoint.hpp).
Status Model::load_checkpoint(const std::string& path, bool gguf, const ModelOptions& options,
                              std::shared_ptr<const Model>* out) {
  formats::Checkpoint ck;
  HW_RETURN_IF_ERROR(gguf ? formats::load_gguf_checkpoint(path, &ck) : formats::load_hf_checkpoint(path, &ck));
  // The checkpoint's own tokenizer (GGUF metadata, the folder's tokenizer.json), unless
  // one is given; a folder without tokenizer.json loads without one (--tokens works).
  std::unique_ptr<Tokenizer> tokenizer;
  if (!options.tokenizer.empty())
    HW_RETURN_IF_ERROR(Tokenizer::load(options.tokenizer, ck.desc.settings.vocab_size, &tokenizer));
  else if (ck.gguf && ck.gguf->has("tokenizer.ggml.model"))
    HW_RETURN_IF_ERROR(tokenizer_from_gguf(*ck.gguf, &tokenizer));
  else if (!ck.tokenizer_json.empty())
    HW_RETURN_IF_ERROR(tokenizer_from_hf(ck.tokenizer_json, &tokenizer));
  if (tokenizer)
    for (int32_t id : tokenizer->eos_ids())
      if (std::find(ck.eos_ids.begin(), ck.eos_ids.end(), id) == ck.eos_ids.end()) ck.eos_ids.push_back(id);
  std::shared_ptr<const Model> model;
  HW_RETURN_IF_ERROR(ModelBuilder::finish(ck.desc, std::move(ck.weights), std::move(tokenizer), path, &model));
  ModelInfo& info = const_cast<Model&>(*model).info_;
  info.architecture = ck.config.arch;
  info.eos_ids = ck.eos_ids;
  info.default_temperature = ck.temperature;
  info.default_top_p = ck.top_p;
  *out = std::move(model);
  return Status::Ok();
}

Status Model::load(const std::string& path_in, const ModelOptions& options,
                   std::shared_ptr<const Model>* out) {
  std::string path = path_in;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return not_found(path + ": no such file or directory");
  if (is_dir(path) && ::stat((path + "/model.json").c_str(), &st) != 0 && formats::is_hf_folder(path))
    return load_checkpoint(path, false, options, out);
  // By name or by magic: a broken file named .gguf gets the GGUF reader's message.
  if (!is_dir(path) && (ends_with(path, ".gguf") || formats::is_gguf(path)))
    return load_checkpoint(path, true, options, out);
  if (is_dir(path)) {
    path += "/model.json";
    if (::stat(path.c_str(), &st) != 0)
      return not_found(path_in + ": the folder holds no model.json and no config.json (convert a "
                                 "checkpoint with 'headwise convert llama2c CKPT.bin --tokenizer TOK.bin -o DIR')");
  }

  graph::ModelDesc desc;
  std::unique_ptr<graph::WeightSet> weights;
  if (ends_with(path, ".json")) {
    HW_RETURN_IF_ERROR(graph::load_description(path, &desc));
    HW_RETURN_IF_ERROR(graph::WeightSet::open_safetensors(desc.weights_file, &weights));
  } else {
    // Anything else is read as a llama2.c checkpoint (that format has no magic number;
    // its header and exact file size are validated instead).
    HW_RETURN_IF_ERROR(graph::WeightSet::open_llama2c(path, &weights));
    const graph::Llama2cConfig& c = weights->llama2c()->config();
    desc = graph::llama_preset(graph::llama2c_settings(c), c.hidden_dim, c.shared_classifier, stem(path)).desc;
    desc.path = path;
  }

  std::unique_ptr<Tokenizer> tokenizer;
  const std::string tok = !options.tokenizer.empty() ? options.tokenizer : desc.tokenizer_file;
  if (!tok.empty()) HW_RETURN_IF_ERROR(Tokenizer::load(tok, desc.settings.vocab_size, &tokenizer));
  return ModelBuilder::finish(desc, std::move(weights), std::move(tokenizer), path, out);
}

Status Model::open_session(const SessionOptions& o, std::unique_ptr<Session>* out) const {
  const graph::Settings& s = plan_->graph.settings;
  if (o.threads < 0 || o.threads > kMaxThreads)
    return invalid_argument("open_session: threads " + std::to_string(o.threads) + " is outside 0.." +
                            std::to_string(kMaxThreads));
  if (o.max_context < 0 || o.max_context > s.max_seq_len)
    return invalid_argument("open_session: max_context " + std::to_string(o.max_context) +
                            " is outside 0..max_seq_len (" + std::to_string(s.max_seq_len) + ")");
  if (o.max_chunk < 0) return invalid_argument("open_session: max_chunk must be >= 0");
  if (o.kv_type != KvType::f32 && o.kv_type != KvType::f16 && o.kv_type != KvType::bf16)
    return invalid_argument("open_session: kv_type " + std::to_string(int(o.kv_type)) +
                            " is not f32 (0), f16 (1) or bf16 (2)");
  auto session = std::unique_ptr<Session>(new Session);
  session->model_ = shared_from_this();
  session->threads_ = o.threads;
  session->max_context_ = o.max_context ? o.max_context : s.max_seq_len;
  session->max_chunk_ = o.max_chunk ? std::min(o.max_chunk, session->max_context_)
                                    : std::min(session->max_context_, 1024);
  session->all_logits_on_ = o.all_logits;
  session->profile_ = o.profile;
  session->hook_ = o.attention_hook;
  HW_RETURN_IF_ERROR(check_session_memory(*plan_, session->max_context_, session->max_chunk_, o.all_logits,
                                          o.memory_limit));
  HW_RETURN_IF_ERROR(SessionBuffers::create(*plan_, session->max_context_, session->max_chunk_,
                                            o.all_logits, o.kv_type, o.threads, &session->buf_));
  *out = std::move(session);
  return Status::Ok();
}

}  // namespace headwise
