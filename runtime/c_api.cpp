// The C API: thin wrappers over the C++ API that turn a Status into an hw_status and
// keep the message readable per thread and per handle. Nothing may throw across this
// boundary: every entry point that can fail runs its body through protect(), and every
// pointer a caller hands in is checked before it is used.
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "headwise/attention.hpp"
#include "headwise/headwise.h"
#include "headwise/model.hpp"
#include "headwise/sampler.hpp"

// The handles. A model handle owns one reference to the Model; every Session holds
// another (Session::model_), so freeing the handle while sessions are open is safe.
struct hw_model {
  std::shared_ptr<const headwise::Model> model;
  // The handle may be used by many threads at once, so its message is guarded.
  mutable std::mutex mu;
  std::string error;
};

struct hw_session {
  std::unique_ptr<headwise::Session> session;
  std::string error;  // a session is used by one thread at a time: no lock
};

struct hw_sampler {
  headwise::Sampler sampler;
  int vocab;
};

namespace {

using headwise::Status;
using headwise::invalid_argument;
using headwise::out_of_range;

thread_local std::string g_last_error;
// Returned by hw_last_error() when even the message could not be stored.
thread_local const char* g_fallback = nullptr;

// Copies a message into `dst` without letting bad_alloc escape.
void store(std::string* dst, const std::string& msg) noexcept {
  try {
    *dst = msg;
  } catch (...) {
    dst->clear();
  }
}

hw_status record(const Status& s, hw_model* m = nullptr, hw_session* const* sessions = nullptr,
                 int n_sessions = 0) noexcept {
  g_fallback = nullptr;
  store(&g_last_error, s.message());
  if (!s.ok() && g_last_error.empty()) g_fallback = "out of memory while recording an error";
  if (m) {
    try {
      std::lock_guard<std::mutex> lock(m->mu);
      store(&m->error, s.message());
    } catch (...) {  // std::mutex::lock may throw system_error; the thread's copy stands
    }
  }
  for (int i = 0; i < n_sessions; ++i)
    if (sessions[i]) store(&sessions[i]->error, s.message());
  return static_cast<hw_status>(s.code());
}

// Runs f, turning any exception (bad_alloc from a container, a bug) into a status.
template <class F>
Status protect(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status(headwise::StatusCode::out_of_memory, "out of memory");
  } catch (const std::exception& e) {
    try {
      return Status(headwise::StatusCode::internal, std::string("internal error: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
  }
  try {
    return Status(headwise::StatusCode::internal, "internal error");
  } catch (...) {
    return Status(headwise::StatusCode::internal, std::string());
  }
}

Status null_arg(const char* fn, const char* arg) {
  return invalid_argument(std::string(fn) + ": " + arg + " is NULL");
}

Status need_tokenizer(const char* fn, const headwise::Model& m) {
  if (m.tokenizer()) return Status::Ok();
  return Status(headwise::StatusCode::unsupported,
                std::string(fn) + ": model '" + m.info().name + "' (" + m.info().source +
                    ") has no tokenizer (load a llama2.c checkpoint with a tokenizer.bin)");
}

Status check_id(const char* fn, const char* what, int32_t id, int vocab) {
  if (id >= 0 && id < vocab) return Status::Ok();
  return out_of_range(std::string(fn) + ": " + what + " id " + std::to_string(id) +
                      " is outside the vocabulary 0.." + std::to_string(vocab - 1));
}

// The thread's copy of a shared model's message, so the pointer handed out stays valid
// while other threads keep writing the model's message.
thread_local std::string g_model_error_copy;

}  // namespace

extern "C" {

const char* hw_last_error(void) { return g_fallback ? g_fallback : g_last_error.c_str(); }

const char* hw_isa(void) { return headwise::isa_name(); }

// ---- models --------------------------------------------------------------------------

hw_status hw_model_load(const char* path, const char* tokenizer, hw_model** out) {
  if (out) *out = nullptr;
  return record(protect([&]() -> Status {
    if (!out) return null_arg("hw_model_load", "out");
    if (!path) return null_arg("hw_model_load", "path");
    headwise::ModelOptions o;
    if (tokenizer) o.tokenizer = tokenizer;
    std::shared_ptr<const headwise::Model> m;
    HW_RETURN_IF_ERROR(headwise::Model::load(path, o, &m));
    auto h = std::make_unique<hw_model>();
    h->model = std::move(m);
    *out = h.release();
    return Status::Ok();
  }));
}

hw_status hw_model_synthetic(const char* name, uint64_t seed, hw_model** out) {
  if (out) *out = nullptr;
  return record(protect([&]() -> Status {
    if (!out) return null_arg("hw_model_synthetic", "out");
    if (!name) return null_arg("hw_model_synthetic", "name");
    std::shared_ptr<const headwise::Model> m;
    HW_RETURN_IF_ERROR(headwise::Model::synthetic(name, seed, &m));
    auto h = std::make_unique<hw_model>();
    h->model = std::move(m);
    *out = h.release();
    return Status::Ok();
  }));
}

hw_status hw_model_info(const hw_model* model, struct hw_model_info* out) {
  hw_model* m = const_cast<hw_model*>(model);  // only its guarded message changes
  return record(protect([&]() -> Status {
                  if (!model) return null_arg("hw_model_info", "model");
                  if (!out) return null_arg("hw_model_info", "out");
                  const headwise::ModelInfo& i = model->model->info();
                  const bool tok = model->model->tokenizer() != nullptr;
                  out->vocab_size = i.vocab_size;
                  out->d_model = i.d_model;
                  out->n_layers = i.n_layers;
                  out->n_heads = i.n_heads;
                  out->n_kv_heads = i.n_kv_heads;
                  out->head_dim = i.head_dim;
                  out->max_seq_len = i.max_seq_len;
                  out->has_tokenizer = tok ? 1 : 0;
                  const headwise::Tokenizer* t = model->model->tokenizer();
                  out->bos_id = tok ? t->bos_id() : -1;
                  out->eos_id = tok && !t->eos_ids().empty() ? t->eos_ids().front() : -1;
                  return Status::Ok();
                }),
                m);
}

hw_status hw_model_free(hw_model* model) {
  delete model;  // NULL is a no-op; sessions keep their own reference to the Model
  return record(Status::Ok());
}

const char* hw_model_last_error(const hw_model* model) {
  if (!model) return "hw_model_last_error: model is NULL";
  try {
    std::lock_guard<std::mutex> lock(model->mu);
    g_model_error_copy = model->error;
    return g_model_error_copy.c_str();
  } catch (...) {
    return "out of memory while reading the model's error";
  }
}

// ---- tokenizer -----------------------------------------------------------------------

hw_status hw_tokenize(const hw_model* model, const char* text, int add_bos, int32_t* out,
                      int capacity, int* n_out) {
  return record(protect([&]() -> Status {
                  const char* fn = "hw_tokenize";
                  if (!model) return null_arg(fn, "model");
                  if (!text) return null_arg(fn, "text");
                  if (!n_out) return null_arg(fn, "n_out");
                  if (capacity < 0)
                    return invalid_argument("hw_tokenize: capacity " + std::to_string(capacity) +
                                            " is negative");
                  if (!out && capacity > 0) return null_arg(fn, "out (with capacity > 0)");
                  HW_RETURN_IF_ERROR(need_tokenizer(fn, *model->model));
                  const std::vector<int32_t> ids = model->model->tokenizer()->encode(text, add_bos != 0);
                  const int n = static_cast<int>(ids.size());
                  *n_out = n;
                  if (n > capacity)
                    return out_of_range("hw_tokenize: the text is " + std::to_string(n) +
                                        " tokens but the buffer holds " + std::to_string(capacity));
                  if (n) std::memcpy(out, ids.data(), ids.size() * sizeof(int32_t));
                  return Status::Ok();
                }),
                const_cast<hw_model*>(model));
}

hw_status hw_detokenize_piece(const hw_model* model, int32_t prev, int32_t token, char* buf,
                              int capacity, int* len_out) {
  return record(protect([&]() -> Status {
                  const char* fn = "hw_detokenize_piece";
                  if (!model) return null_arg(fn, "model");
                  if (!len_out) return null_arg(fn, "len_out");
                  if (capacity < 0)
                    return invalid_argument("hw_detokenize_piece: capacity " +
                                            std::to_string(capacity) + " is negative");
                  if (!buf && capacity > 0) return null_arg(fn, "buf (with capacity > 0)");
                  HW_RETURN_IF_ERROR(need_tokenizer(fn, *model->model));
                  const headwise::Tokenizer& tok = *model->model->tokenizer();
                  HW_RETURN_IF_ERROR(check_id(fn, "prev", prev, tok.vocab_size()));
                  HW_RETURN_IF_ERROR(check_id(fn, "token", token, tok.vocab_size()));
                  const std::string piece = tok.decode(prev, token);
                  const int len = static_cast<int>(piece.size());
                  *len_out = len;
                  if (len + 1 > capacity)
                    return out_of_range("hw_detokenize_piece: token " + std::to_string(token) +
                                        " prints " + std::to_string(len) +
                                        " bytes; the buffer needs room for " +
                                        std::to_string(len + 1) + " (with the NUL) but holds " +
                                        std::to_string(capacity));
                  std::memcpy(buf, piece.data(), piece.size());
                  buf[len] = '\0';
                  return Status::Ok();
                }),
                const_cast<hw_model*>(model));
}

// ---- sessions ------------------------------------------------------------------------

hw_status hw_session_open(const hw_model* model, const hw_session_options* opts,
                          hw_session** out) {
  if (out) *out = nullptr;
  return record(protect([&]() -> Status {
                  if (!model) return null_arg("hw_session_open", "model");
                  if (!out) return null_arg("hw_session_open", "out");
                  headwise::SessionOptions o;
                  if (opts) {
                    if (opts->threads < 0 || opts->threads > headwise::kMaxThreads)
                      return invalid_argument("hw_session_open: threads " +
                                              std::to_string(opts->threads) + " is outside 0.." +
                                              std::to_string(headwise::kMaxThreads));
                    o.threads = opts->threads;
                    o.max_context = opts->max_context;
                    if (opts->kv_type != HW_KV_F32 && opts->kv_type != HW_KV_F16 &&
                        opts->kv_type != HW_KV_BF16)
                      return invalid_argument("hw_session_open: kv_type " +
                                              std::to_string(opts->kv_type) +
                                              " is not HW_KV_F32 (0), HW_KV_F16 (1) or HW_KV_BF16 (2)");
                    o.kv_type = static_cast<headwise::KvType>(opts->kv_type);
                  }
                  auto h = std::make_unique<hw_session>();
                  const Status s = model->model->open_session(o, &h->session);
                  if (!s.ok()) return Status(s.code(), "hw_session_open: " + s.message());
                  *out = h.release();
                  return Status::Ok();
                }),
                const_cast<hw_model*>(model));
}

hw_status hw_session_close(hw_session* session) {
  delete session;  // NULL is a no-op
  return record(Status::Ok());
}

hw_status hw_session_prefill(hw_session* session, const int32_t* tokens, int n) {
  return record(protect([&]() -> Status {
                  if (!session) return null_arg("hw_session_prefill", "session");
                  if (!tokens) return null_arg("hw_session_prefill", "tokens");
                  if (n <= 0)
                    return invalid_argument("hw_session_prefill: n is " + std::to_string(n) +
                                            " (at least 1 token)");
                  const Status s = session->session->prefill(tokens, n);
                  if (!s.ok()) return Status(s.code(), "hw_session_prefill: " + s.message());
                  return s;
                }),
                nullptr, &session, 1);
}

hw_status hw_session_decode(hw_session* session, int32_t token) {
  return record(protect([&]() -> Status {
                  if (!session) return null_arg("hw_session_decode", "session");
                  const Status s = session->session->decode(token);
                  if (!s.ok()) return Status(s.code(), "hw_session_decode: " + s.message());
                  return s;
                }),
                nullptr, &session, 1);
}

hw_status hw_session_decode_batch(hw_session* const* sessions, const int32_t* tokens, int n,
                                  int threads) {
  // Checked here, before Session::decode_batch sees the array: it reads sessions[0]
  // before checking entries for NULL.
  const bool listable = sessions && n > 0;
  return record(protect([&]() -> Status {
                  const char* fn = "hw_session_decode_batch";
                  if (!sessions) return null_arg(fn, "sessions");
                  if (!tokens) return null_arg(fn, "tokens");
                  if (n <= 0)
                    return invalid_argument("hw_session_decode_batch: n is " + std::to_string(n) +
                                            " (at least 1 session)");
                  if (threads < 0 || threads > headwise::kMaxThreads)
                    return invalid_argument("hw_session_decode_batch: threads " +
                                            std::to_string(threads) + " is outside 0.." +
                                            std::to_string(headwise::kMaxThreads));
                  std::vector<headwise::Session*> s(n);
                  for (int i = 0; i < n; ++i) {
                    if (!sessions[i])
                      return invalid_argument("hw_session_decode_batch: sessions[" +
                                              std::to_string(i) + "] is NULL");
                    s[i] = sessions[i]->session.get();
                  }
                  // Session::decode_batch hands a batch of one to decode(), which uses the
                  // session's own thread count; honour an explicit `threads` there too.
                  struct Restore {
                    headwise::Session* s;
                    int threads;
                    ~Restore() { s->set_threads(threads); }
                  } restore{s[0], s[0]->threads()};
                  if (n == 1 && threads > 0) s[0]->set_threads(threads);
                  const Status st = headwise::Session::decode_batch(s.data(), tokens, n, threads);
                  if (!st.ok()) return Status(st.code(), std::string(fn) + ": " + st.message());
                  return st;
                }),
                nullptr, listable ? sessions : nullptr, listable ? n : 0);
}

hw_status hw_session_logits(const hw_session* session, const float** out, int* vocab) {
  hw_session* self = const_cast<hw_session*>(session);  // only its message changes
  return record(protect([&]() -> Status {
                  if (!session) return null_arg("hw_session_logits", "session");
                  if (!out) return null_arg("hw_session_logits", "out");
                  if (!vocab) return null_arg("hw_session_logits", "vocab");
                  // The logits buffer is uninitialised until something ran.
                  if (session->session->position() == 0)
                    return out_of_range("hw_session_logits: no logits yet (the session holds no "
                                        "positions: prefill or decode first)");
                  *out = session->session->logits();
                  *vocab = session->session->model().info().vocab_size;
                  return Status::Ok();
                }),
                nullptr, &self, 1);
}

hw_status hw_session_position(const hw_session* session, int* out) {
  hw_session* self = const_cast<hw_session*>(session);
  return record(protect([&]() -> Status {
                  if (!session) return null_arg("hw_session_position", "session");
                  if (!out) return null_arg("hw_session_position", "out");
                  *out = session->session->position();
                  return Status::Ok();
                }),
                nullptr, &self, 1);
}

hw_status hw_session_kv_cache_bytes(const hw_session* session, uint64_t* out) {
  hw_session* self = const_cast<hw_session*>(session);
  return record(protect([&]() -> Status {
                  if (!session) return null_arg("hw_session_kv_cache_bytes", "session");
                  if (!out) return null_arg("hw_session_kv_cache_bytes", "out");
                  *out = session->session->kv_cache_bytes();
                  return Status::Ok();
                }),
                nullptr, &self, 1);
}

hw_status hw_session_reset(hw_session* session) {
  return record(protect([&]() -> Status {
                  if (!session) return null_arg("hw_session_reset", "session");
                  session->session->reset();
                  return Status::Ok();
                }),
                nullptr, &session, 1);
}

hw_status hw_session_set_threads(hw_session* session, int threads) {
  return record(protect([&]() -> Status {
                  if (!session) return null_arg("hw_session_set_threads", "session");
                  if (threads < 0 || threads > headwise::kMaxThreads)
                    return invalid_argument("hw_session_set_threads: threads " +
                                            std::to_string(threads) + " is outside 0.." +
                                            std::to_string(headwise::kMaxThreads));
                  session->session->set_threads(threads);
                  return Status::Ok();
                }),
                nullptr, &session, 1);
}

const char* hw_session_last_error(const hw_session* session) {
  if (!session) return "hw_session_last_error: session is NULL";
  return session->error.c_str();
}

// ---- sampling ------------------------------------------------------------------------

hw_status hw_sampler_new(int vocab, float temperature, float top_p, uint64_t seed,
                         hw_sampler** out) {
  if (out) *out = nullptr;
  return record(protect([&]() -> Status {
    if (!out) return null_arg("hw_sampler_new", "out");
    if (vocab < 1) return invalid_argument("hw_sampler_new: vocab " + std::to_string(vocab) + " is below 1");
    // Only greedy sampling (temperature <= 0 or NaN) ignores the random stream; a zero
    // seed would keep xorshift at 0 forever and always draw the first token.
    if (temperature > 0.0f && seed == 0)
      return invalid_argument("hw_sampler_new: seed is 0 (xorshift would stay at 0); pick any other seed");
    *out = new hw_sampler{headwise::Sampler(vocab, temperature, top_p, seed), vocab};
    return Status::Ok();
  }));
}

hw_status hw_sampler_sample(hw_sampler* sampler, const float* logits, int32_t* out) {
  return record(protect([&]() -> Status {
    if (!sampler) return null_arg("hw_sampler_sample", "sampler");
    if (!logits) return null_arg("hw_sampler_sample", "logits");
    if (!out) return null_arg("hw_sampler_sample", "out");
    *out = sampler->sampler.sample(logits);
    return Status::Ok();
  }));
}

hw_status hw_sampler_free(hw_sampler* sampler) {
  delete sampler;
  return record(Status::Ok());
}

// ---- attention -----------------------------------------------------------------------

hw_status hw_attention_f32(const hw_attention_params* params, const float* q,
                           const int64_t* q_strides, const float* k, const int64_t* k_strides,
                           const float* v, const int64_t* v_strides, float* out,
                           const int64_t* out_strides) {
  return record(protect([&]() -> Status {
    if (!params) return invalid_argument("hw_attention_f32: params is NULL");
    const hw_attention_params& c = *params;
    headwise::AttentionParams a;
    a.batch = c.batch;
    a.q_len = c.q_len;
    a.kv_len = c.kv_len;
    a.q_heads = c.q_heads;
    a.kv_heads = c.kv_heads;
    a.head_dim = c.head_dim;
    a.causal = c.causal != 0;
    a.scale = c.scale;
    a.kv_valid = c.kv_valid;
    a.threads = c.threads;
    auto in = [&](const float* p, const int64_t* s, int T, int H) {
      return s ? headwise::AttnInput{p, s[0], s[1], s[2]}
               : headwise::packed_input(p, T, H, c.head_dim);
    };
    headwise::AttnOutput o = out_strides
                                 ? headwise::AttnOutput{out, out_strides[0], out_strides[1], out_strides[2]}
                                 : headwise::packed_output(out, c.q_len, c.q_heads, c.head_dim);
    return headwise::attention(a, in(q, q_strides, c.q_len, c.q_heads),
                               in(k, k_strides, c.kv_len, c.kv_heads),
                               in(v, v_strides, c.kv_len, c.kv_heads), o);
  }));
}

}  // extern "C"
