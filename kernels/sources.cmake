list(APPEND HEADWISE_SOURCES
  kernels/dispatch.cpp
  kernels/attention/attention.cpp
  kernels/attention/attn_ref.cpp
  kernels/attention/attn_fwd_f32_avx512.cpp
  kernels/attention/attn_fwd_f32_avx2.cpp
  kernels/attention/attn_fwd_f32_scalar.cpp
)
