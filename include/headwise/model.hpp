// The C++ API for running models: load a model once (immutable, shareable by any
// number of threads), open sessions on it (each owns its KV cache and activations),
// prefill prompts, decode tokens, read logits.
//
//   std::shared_ptr<const headwise::Model> model;
//   headwise::Status st = headwise::Model::load("stories260K/", {}, &model);
//   if (!st.ok()) { std::fprintf(stderr, "%s\n", st.message().c_str()); return 1; }
//   std::unique_ptr<headwise::Session> s;
//   st = model->open_session({}, &s);                                         // check st
//   st = s->prefill(model->tokenizer()->encode("Once upon a time", true));   // check st
//   int32_t next = headwise::Sampler(model->info().vocab_size, 0, 1, 0).sample(s->logits());
//
// Threads: every call runs on `threads` OpenMP threads of the calling thread (per
// session, changeable with set_threads); headwise never starts threads of its own and
// never nests parallel regions. Sessions used concurrently from T application threads
// should be given threads = cores / T each so the machine is not oversubscribed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "headwise/kv_type.hpp"
#include "headwise/limits.hpp"
#include "headwise/status.hpp"
#include "headwise/tokenizer.hpp"

namespace headwise {

namespace graph {
struct Plan;
}
struct SessionBuffers;

struct ModelInfo {
  std::string name;
  std::string source;      // the file the model was loaded from
  int vocab_size = 0, d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int max_seq_len = 0;
  size_t weight_bytes = 0;           // packed GEMM weights + other weights, in memory
  int64_t activation_floats_per_row = 0;  // the memory plan's arena, per token of a step
  size_t kv_bytes_per_token = 0;     // KV cache bytes per position (all layers), f32 cache;
                                     // a session's own: Session::kv_bytes_per_token()
  // GGUF / Hugging Face checkpoints: the architecture ("llama", "qwen3", ...; empty for
  // descriptions and llama2.c), the ids that end generation (empty: llama2.c's rule,
  // BOS ends the text), and generation_config.json's sampling defaults (< 0: none).
  std::string architecture;
  std::vector<int32_t> eos_ids;
  float default_temperature = -1, default_top_p = -1;
};

struct ModelOptions {
  // tokenizer.bin to use instead of the one the description names (required for a
  // llama2.c checkpoint, which carries none).
  std::string tokenizer;
};

// What an attention node saw and produced in one step, handed to a session's hook
// (used by `headwise maps` / `heads` to recompute attention weights and to ablate
// heads). Called after the node ran; `out` may be modified.
struct AttentionTap {
  int layer = 0;                 // block layer of the node
  int rows = 0;                  // query rows in this step
  int pos0 = 0;                  // position of the first query row
  int heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = true;
  float scale = 0;
  const float* q = nullptr;  int64_t q_stride = 0;   // (rows, heads·head_dim), after RoPE
  const float* k = nullptr;  const float* v = nullptr;
  int64_t kv_stride = 0;  int kv_len = 0;            // (kv_len, kv_heads·head_dim) cache,
                                                     // rows kv_stride floats apart,
                                                     // fp32 (a 16-bit cache is widened)
  float* out = nullptr;  int64_t out_stride = 0;     // (rows, heads·head_dim)
};
using AttentionHook = std::function<void(const AttentionTap&)>;

// Per-op timing of a session (enabled by SessionOptions::profile).
struct OpTiming {
  int node = 0;             // index in the plan
  int layer = -1;
  std::string op;           // "linear", "attention", ...
  std::string where;        // the description node: "block[4] (linear), layer 2"
  int calls = 0;
  double seconds = 0;
  double flops = 0;         // total over calls
  double bytes = 0;         // weight/cache bytes read, total over calls
};
struct TraceEvent {         // one op call, for Chrome trace-event JSON
  int node = 0;
  double start_us = 0, dur_us = 0;
  int rows = 0;
};

struct SessionOptions {
  int threads = 0;          // 0: all cores
  int max_context = 0;      // 0: the model's max_seq_len (KV cache size, positions)
  int max_chunk = 0;        // rows per prefill pass; 0: min(max_context, 1024)
  bool all_logits = false;  // keep the logits of every position (prefill), not just the last
  bool profile = false;     // time every op (timings()), and record trace events
  // Element type of the KV cache: f32 (exact), f16 or bf16 (half the bytes; K/V rows are
  // rounded to nearest even when written, attention widens them in registers).
  KvType kv_type = KvType::f32;
  // Bytes the session's KV cache, activations and logits may take, checked before
  // they are allocated; 0: the memory available now (MemAvailable).
  uint64_t memory_limit = 0;
  AttentionHook attention_hook;
};

class Session;

class Model : public std::enable_shared_from_this<Model> {
 public:
  // `path`: a model description (model.json), a folder holding model.json, a GGUF file,
  // a Hugging Face folder (config.json + safetensors), or a llama2.c checkpoint (*.bin,
  // with options.tokenizer). Every error names the file and the tensor or field at fault.
  static Status load(const std::string& path, const ModelOptions& options,
                     std::shared_ptr<const Model>* out);
  ~Model();

  // A model with seeded random weights generated in memory, for benchmarks and demos
  // (same seed, same weights). Names: see synthetic_names(): "gpt2-small" (12 layers,
  // d 768, 12 heads, vocab 50257, context 1024), "llama-134m" (12 layers, d 768,
  // 12 heads, d_ff 2048, vocab 32000, context 2048), "llama-1b-like" (16 layers, d 2048,
  // 32 heads, 8 kv heads, d_ff 8192, vocab 32000), "llama-7b-1layer" (1 layer, d 4096,
  // 32 heads, d_ff 11008, vocab 32000) and "tiny" (2 layers, d 64, with a built-in
  // character tokenizer).
  static Status synthetic(const std::string& name, uint64_t seed, std::shared_ptr<const Model>* out);
  static std::vector<std::string> synthetic_names();

  const ModelInfo& info() const { return info_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const graph::Plan& plan() const { return *plan_; }

  Status open_session(const SessionOptions& options, std::unique_ptr<Session>* out) const;

 private:
  Model() = default;
  static Status load_checkpoint(const std::string& path, bool gguf, const ModelOptions& options,
                                std::shared_ptr<const Model>* out);
  friend struct ModelBuilder;
  ModelInfo info_;
  std::unique_ptr<graph::Plan> plan_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

class Session {
 public:
  ~Session();

  // Appends tokens at the current position and runs them through the model in one
  // pass per chunk of max_chunk rows (fused attention over the whole chunk). Errors:
  // a token id outside the vocabulary, or the context would overflow.
  Status prefill(const int32_t* tokens, int n);
  Status prefill(const std::vector<int32_t>& tokens) {
    return prefill(tokens.data(), static_cast<int>(tokens.size()));
  }
  // One token through the model, attending to the KV cache (the decode path).
  Status decode(int32_t token) { return prefill(&token, 1); }

  // Advances several sessions of the same model by one token each, their projections
  // batched into one GEMM per weight; attention runs per sequence on its own cache.
  // `threads` = 0 takes the first session's setting.
  static Status decode_batch(Session* const* sessions, const int32_t* tokens, int n,
                             int threads = 0);
  // One pass over several sessions of the same model, each taking its own number of
  // tokens: session i appends counts[i] tokens (a prompt chunk, or 1 to decode), read
  // from `tokens` session after session. Every projection is one GEMM over all the rows
  // (M = the sum of counts), so prompt chunks and decode steps of many sequences share
  // one pass over the weights (continuous batching). Afterwards each session's logits()
  // are those of its last token (all_logits is not kept). The sum of counts bounds the
  // rows of this pass; a server bounds it with its prefill chunk.
  static Status step_batch(Session* const* sessions, const int32_t* tokens, const int* counts, int n,
                           int threads = 0);

  // Logits of the last position processed (vocab_size floats).
  const float* logits() const;
  // With all_logits: (positions of the last prefill, vocab_size), row-major.
  const std::vector<float>& all_logits() const { return all_logits_; }

  int position() const { return pos_; }
  int max_context() const { return max_context_; }
  void reset();  // forget the context (keeps the memory)
  // Clamped to 0..kMaxThreads (0: all cores).
  void set_threads(int threads) { threads_ = threads < 0 ? 0 : threads > kMaxThreads ? kMaxThreads : threads; }
  int threads() const { return threads_; }
  const Model& model() const { return *model_; }

  const std::vector<OpTiming>& timings() const { return timings_; }
  const std::vector<TraceEvent>& trace() const { return trace_; }
  void clear_profile();

  size_t kv_cache_bytes() const;     // the cache's bytes (its element type's size)
  size_t kv_bytes_per_token() const; // per position, all layers
  KvType kv_type() const;
  size_t arena_bytes() const;

 private:
  friend class Model;
  Session() = default;
  static Status step_batch(Session* const* sessions, const int32_t* tokens, const int* counts, int n,
                           int threads, const char* fn);  // fn names the caller in errors
  std::shared_ptr<const Model> model_;
  int threads_ = 0, max_context_ = 0, max_chunk_ = 0, pos_ = 0;
  int last_logits_row_ = 0;  // row of buf_->logits holding the last position's logits
  bool all_logits_on_ = false, profile_ = false;
  AttentionHook hook_;
  std::unique_ptr<SessionBuffers> buf_;
  std::vector<float> all_logits_;
  std::vector<OpTiming> timings_;
  std::vector<TraceEvent> trace_;
};

}  // namespace headwise
