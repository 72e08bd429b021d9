list(APPEND HEADWISE_SOURCES
  kernels/dispatch.cpp
  kernels/attention/attention.cpp
  kernels/attention/attn_ref.cpp
  kernels/attention/attn_fwd_f32_avx512.cpp
  kernels/attention/attn_fwd_f32_avx2.cpp
  kernels/attention/attn_fwd_f32_scalar.cpp
)
list(APPEND HEADWISE_SOURCES
  kernels/probe/peak_fma_avx512.cpp
  kernels/probe/peak_fma_avx2.cpp
)
