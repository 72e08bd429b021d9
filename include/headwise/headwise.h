/* headwise — the C API.
 *
 * Plain C, usable from C and any language with a C FFI. No C++ exception crosses this
 * boundary: every call returns an hw_status; HW_OK (0) means success, anything else is
 * an error whose message hw_last_error() returns (per calling thread, valid until that
 * thread's next headwise call).
 */
#ifndef HEADWISE_HEADWISE_H
#define HEADWISE_HEADWISE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hw_status {
  HW_OK = 0,
  HW_ERR_INVALID_ARGUMENT = 1,
  HW_ERR_NOT_FOUND = 2,
  HW_ERR_IO = 3,
  HW_ERR_FORMAT = 4,
  HW_ERR_UNSUPPORTED = 5,
  HW_ERR_OUT_OF_RANGE = 6,
  HW_ERR_INTERNAL = 7
} hw_status;

/* The message of the calling thread's last failed call ("" if none). */
const char* hw_last_error(void);

/* The ISA the kernels use: "avx512", "avx2" or "scalar" (HEADWISE_ISA caps it). */
const char* hw_isa(void);

/* ---- multi-head attention ------------------------------------------------------------
 * O[b,i,h] = softmax(Q[b,i,h]·K[b,:,h/g]ᵀ·scale + mask)·V[b,:,h/g], g = q_heads/kv_heads.
 * Tensors are [batch][positions][heads][head_dim] with head_dim contiguous; strides are
 * in elements, {batch, position, head}; a NULL strides pointer means densely packed. */
typedef struct hw_attention_params {
  int batch, q_len, kv_len, q_heads, kv_heads, head_dim;
  int causal;               /* non-zero: query i sits at key position kv_len - q_len + i */
  float scale;              /* 0: 1/sqrt(head_dim) */
  const int32_t* kv_valid;  /* NULL or (batch,) valid key counts (padded batches) */
  int threads;              /* 0: all OpenMP threads */
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
