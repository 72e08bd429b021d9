// The C API: thin wrappers over the C++ API that turn a Status into an hw_status and
// keep the message readable per thread. Nothing may throw across this boundary.
#include <exception>
#include <string>

#include "headwise/attention.hpp"
#include "headwise/headwise.h"

namespace {

thread_local std::string g_last_error;

hw_status report(const headwise::Status& s) {
  g_last_error = s.message();
  return static_cast<hw_status>(s.code());
}

template <class F>
hw_status guarded(F&& f) {
  try {
    return report(f());
  } catch (const std::exception& e) {
    g_last_error = std::string("internal error: ") + e.what();
  } catch (...) {
    g_last_error = "internal error";
  }
  return HW_ERR_INTERNAL;
}

}  // namespace

extern "C" {

const char* hw_last_error(void) { return g_last_error.c_str(); }

const char* hw_isa(void) { return headwise::isa_name(); }

hw_status hw_attention_f32(const hw_attention_params* params, const float* q,
                           const int64_t* q_strides, const float* k, const int64_t* k_strides,
                           const float* v, const int64_t* v_strides, float* out,
                           const int64_t* out_strides) {
  return guarded([&]() -> headwise::Status {
    if (!params) return headwise::invalid_argument("hw_attention_f32: params is NULL");
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
  });
}

}  // extern "C"
