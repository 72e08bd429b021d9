/* headwise — the C API.
 *
 * Plain C, usable from C and any language with a C FFI; it wraps the C++ API
 * (headwise/model.hpp), which stays the primary one.
 *
 * Errors. No C++ exception crosses this boundary and nothing here aborts: every call
 * that can fail returns an hw_status; HW_OK (0) means success, anything else is an
 * error with a message that names the culprit (the file, the argument, the token id).
 * The message is kept in two places:
 *   - per calling thread: hw_last_error() is the message of that thread's most recent
 *     status-returning call ("" after a success), valid until its next such call;
 *   - per handle: hw_model_last_error() / hw_session_last_error() give the message of
 *     the most recent status-returning call made on that handle ("" after a success).
 *     A model shared by several threads keeps the last message of any of them, so
 *     concurrent callers of one model should read hw_last_error() instead.
 * A NULL handle or pointer argument is an error (HW_ERR_INVALID_ARGUMENT, with a message
 * naming the argument), never a crash. The only exceptions are the release functions
 * hw_model_free(), hw_session_close() and hw_sampler_free(), which accept NULL and do
 * nothing, like free(NULL), so cleanup paths need no checks; and the message getters,
 * which given NULL return a message saying so.
 * On failure, a function that creates a handle sets *out to NULL.
 *
 * Lifetimes.
 *   - A session keeps its model alive: hw_model_free() may be called while sessions of
 *     that model are still open; the weights are released when the last of them closes.
 *   - hw_session_logits() points into the session: valid until the next prefill, decode,
 *     decode_batch, reset or close of that session.
 *   - A string from hw_*_last_error() is valid until the calling thread's next headwise
 *     call (hw_session_last_error: until the session's next call or close).
 *
 * Threads.
 *   - One loaded model may be shared by any number of threads: hw_session_open,
 *     hw_model_info, hw_tokenize and hw_detokenize_piece may run concurrently on it.
 *   - A session (and a sampler) must not be used by two threads at once; different
 *     sessions may run concurrently, each on its own thread. hw_session_decode_batch
 *     uses all the sessions it is given: none of them may be in use elsewhere meanwhile.
 *   - headwise starts no threads of its own: each call runs on `threads` OpenMP threads
 *     of the calling thread (the session's setting; 0 = all cores). With T application
 *     threads calling concurrently, give each session threads = cores / T (or 1) so the
 *     machine is not oversubscribed. headwise never nests parallel regions: each op
 *     opens at most one, on the calling thread.
 */
#ifndef HEADWISE_HEADWISE_H
#define HEADWISE_HEADWISE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hw_status {
  HW_OK = 0,
  HW_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, a negative count, a bad option */
  HW_ERR_NOT_FOUND = 2,        /* a file (model, tokenizer) or tensor is missing */
  HW_ERR_IO = 3,               /* a file could not be read */
  HW_ERR_FORMAT = 4,           /* a file's content is malformed */
  HW_ERR_UNSUPPORTED = 5,      /* valid but not supported (e.g. a model without tokenizer) */
  HW_ERR_OUT_OF_RANGE = 6,     /* a token id, the context length or a buffer's capacity */
  HW_ERR_INTERNAL = 7,         /* oneDNN failure, a bug */
  HW_ERR_OUT_OF_MEMORY = 8     /* an allocation failed, or a session would need more memory
                                  than is available (the message gives the numbers) */
} hw_status;

/* The message of the calling thread's most recent status-returning call ("" if it
 * succeeded). */
const char* hw_last_error(void);

/* The ISA hw_attention_f32 and models loaded from now on use: "avx512", "avx2" or
 * "scalar" (HEADWISE_ISA caps it). A loaded model keeps the ISA it was loaded with. */
const char* hw_isa(void);

/* ---- models ---------------------------------------------------------------------------
 * Immutable once loaded; shareable by any number of threads and sessions. */
typedef struct hw_model hw_model;

/* Like POSIX's struct stat and stat(), the struct and the function that fills it share
 * a name, so the struct is written `struct hw_model_info` (no typedef). */
struct hw_model_info {
  int vocab_size, d_model, n_layers, n_heads, n_kv_heads, head_dim;
  int max_seq_len;    /* positions a session can hold at most */
  int has_tokenizer;  /* non-zero: hw_tokenize / hw_detokenize_piece work */
  int32_t bos_id;     /* begin-of-text token (llama2.c: 1; generation stops when it is
                         sampled), -1 without a tokenizer */
  int32_t eos_id;     /* end-of-text token (2), -1 without a tokenizer */
};

/* path: a model description (model.json), a folder holding model.json, or a llama2.c
 * checkpoint (*.bin), which needs `tokenizer` (a tokenizer.bin) to have one. tokenizer:
 * NULL to use the one the description names. Errors name the file and what is wrong. */
hw_status hw_model_load(const char* path, const char* tokenizer, hw_model** out);

/* A model with seeded random weights made in memory (same seed, same weights):
 * "tiny" (2 layers, d 64, character tokenizer, context 256; loads in milliseconds),
 * "gpt2-small", "llama-134m", "llama-1b-like", "llama-7b-1layer". */
hw_status hw_model_synthetic(const char* name, uint64_t seed, hw_model** out);

hw_status hw_model_info(const hw_model* model, struct hw_model_info* out);

/* Releases the handle; open sessions keep the model itself alive. NULL: no-op. */
hw_status hw_model_free(hw_model* model);

/* The message of the most recent status-returning call on `model` ("" if it succeeded;
 * see the note on shared models at the top). */
const char* hw_model_last_error(const hw_model* model);

/* ---- tokenizer (models that have one) ---------------------------------------------------
 * text (UTF-8, NUL-terminated) → token ids: BOS first if add_bos, then llama2.c's BPE.
 * Writes at most `capacity` ids to out (which may be NULL when capacity is 0) and the
 * count in *n_out. When capacity is too small nothing is written, *n_out is the number
 * needed and the result is HW_ERR_OUT_OF_RANGE. */
hw_status hw_tokenize(const hw_model* model, const char* text, int add_bos, int32_t* out,
                      int capacity, int* n_out);

/* The bytes llama2.c prints for `token` following `prev` (after BOS a leading space is
 * dropped; "<0xHH>" pieces are that byte; a lone unprintable byte prints as nothing),
 * NUL-terminated in buf; *len_out is the length without the NUL. Both ids must be in
 * the vocabulary. When capacity < *len_out + 1 nothing is written and the result is
 * HW_ERR_OUT_OF_RANGE (buf may be NULL when capacity is 0). */
hw_status hw_detokenize_piece(const hw_model* model, int32_t prev, int32_t token, char* buf,
                              int capacity, int* len_out);

/* ---- sessions -------------------------------------------------------------------------
 * One conversation: a KV cache of max_context positions, allocated when it opens. */
typedef struct hw_session hw_session;

/* Element type of a session's KV cache. Activations and arithmetic stay fp32; a 16-bit
 * cache holds K/V rows rounded to nearest even and takes half the memory and half the
 * bytes read per decoded token. */
typedef enum hw_kv_type {
  HW_KV_F32 = 0,  /* exact (the default) */
  HW_KV_F16 = 1,  /* IEEE binary16 (llama.cpp's default cache type) */
  HW_KV_BF16 = 2  /* bfloat16 */
} hw_kv_type;

typedef struct hw_session_options {
  int threads;      /* OpenMP threads per call; 0: all cores; at most 1024 */
  int max_context;  /* positions (KV cache size); 0: the model's max_seq_len */
  int kv_type;      /* an hw_kv_type; anything else is HW_ERR_INVALID_ARGUMENT */
} hw_session_options;
/* opts NULL (or all zero): the defaults above. */
hw_status hw_session_open(const hw_model* model, const hw_session_options* opts,
                          hw_session** out);
/* Releases the session (and the model, if this was its last reference). NULL: no-op. */
hw_status hw_session_close(hw_session* session);

/* Appends n >= 1 tokens at the current position in one pass per chunk. Errors: a token
 * outside the vocabulary (HW_ERR_OUT_OF_RANGE naming it and its index), more tokens
 * than the context has room for (HW_ERR_OUT_OF_RANGE); the session is unchanged then. */
hw_status hw_session_prefill(hw_session* session, const int32_t* tokens, int n);
/* One token through the model (the decode path). */
hw_status hw_session_decode(hw_session* session, int32_t token);
/* Advances n sessions of the same model by one token each (tokens[i] to sessions[i]),
 * their projections batched into one GEMM per weight. Sessions may sit at different
 * positions; a session may appear only once. threads: 0 takes sessions[0]'s setting.
 * The logits equal those of stepping each session alone (up to float rounding). */
hw_status hw_session_decode_batch(hw_session* const* sessions, const int32_t* tokens, int n,
                                  int threads);

/* The logits of the last position processed (*vocab floats). HW_ERR_OUT_OF_RANGE when
 * nothing has been processed since the session opened or was reset. */
hw_status hw_session_logits(const hw_session* session, const float** out, int* vocab);
/* The KV cache's size in bytes (max_context positions of its element type). */
hw_status hw_session_kv_cache_bytes(const hw_session* session, uint64_t* out);
/* Positions held (tokens processed since open / reset). */
hw_status hw_session_position(const hw_session* session, int* out);
/* Forgets the context; keeps the memory. */
hw_status hw_session_reset(hw_session* session);
/* OpenMP threads per call from now on (0: all cores). */
hw_status hw_session_set_threads(hw_session* session, int threads);

/* The message of the most recent status-returning call on `session` ("" if it
 * succeeded; decode_batch records its result on every session it was given). */
const char* hw_session_last_error(const hw_session* session);

/* ---- sampling ---------------------------------------------------------------------------
 * llama2.c's sampler, draw for draw: temperature <= 0 is greedy (the first maximum);
 * otherwise softmax(logits / temperature), restricted to the top-p nucleus when
 * 0 < top_p < 1, drawn with a xorshift* stream seeded by `seed` (which must then not be
 * 0). Not thread-safe: one sampler per thread (or per session). */
typedef struct hw_sampler hw_sampler;
hw_status hw_sampler_new(int vocab, float temperature, float top_p, uint64_t seed,
                         hw_sampler** out);
/* logits: `vocab` floats (not modified); the chosen id in *out. */
hw_status hw_sampler_sample(hw_sampler* sampler, const float* logits, int32_t* out);
/* NULL: no-op. */
hw_status hw_sampler_free(hw_sampler* sampler);

/* ---- multi-head attention ------------------------------------------------------------
 * O[b,i,h] = softmax(Q[b,i,h]·K[b,:,h/g]ᵀ·scale + mask)·V[b,:,h/g], g = q_heads/kv_heads.
 * Tensors are [batch][positions][heads][head_dim] with head_dim contiguous; strides are
 * in elements, {batch, position, head}; a NULL strides pointer means densely packed. */
typedef struct hw_attention_params {
  int batch, q_len, kv_len, q_heads, kv_heads, head_dim;
  int causal;               /* non-zero: query i sits at key position kv_len - q_len + i */
  float scale;              /* 0: 1/sqrt(head_dim) */
  const int32_t* kv_valid;  /* NULL or (batch,) valid key counts (padded batches) */
  int threads;              /* 0: all OpenMP threads; at most 1024 */
} hw_attention_params;

hw_status hw_attention_f32(const hw_attention_params* params,
                           const float* q, const int64_t* q_strides,
                           const float* k, const int64_t* k_strides,
                           const float* v, const int64_t* v_strides,
                           float* out, const int64_t* out_strides);

#ifdef __cplusplus
}
#endif

#endif /* HEADWISE_HEADWISE_H */
