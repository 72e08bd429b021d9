// The C API's KV-cache type (hw_session_options.kv_type): each type opens, a 16-bit cache
// is half the bytes and gives the logits the C++ API gives for the same type, and a
// value outside hw_kv_type is HW_ERR_INVALID_ARGUMENT with a message naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "headwise/headwise.h"
#include "headwise/model.hpp"

namespace headwise::test {
namespace {

struct ModelDel { void operator()(hw_model* m) const { hw_model_free(m); } };
struct SessionDel { void operator()(hw_session* s) const { hw_session_close(s); } };

TEST(CApiKvType, TypesBytesLogitsAndBadValue) {
  hw_model* raw = nullptr;
  ASSERT_EQ(hw_model_synthetic("tiny", 7, &raw), HW_OK) << hw_last_error();
  std::unique_ptr<hw_model, ModelDel> m(raw);
  std::shared_ptr<const Model> cpp;
  ASSERT_TRUE(Model::synthetic("tiny", 7, &cpp).ok());
  const int32_t tokens[] = {1, 5, 9, 12, 3, 40, 7};

  uint64_t f32_bytes = 0;
  for (int t : {HW_KV_F32, HW_KV_F16, HW_KV_BF16}) {
    hw_session_options o = {1, 32, t};
    hw_session* s = nullptr;
    ASSERT_EQ(hw_session_open(m.get(), &o, &s), HW_OK) << hw_last_error();
    std::unique_ptr<hw_session, SessionDel> hold(s);
    uint64_t bytes = 0;
    ASSERT_EQ(hw_session_kv_cache_bytes(s, &bytes), HW_OK);
    if (t == HW_KV_F32) f32_bytes = bytes;
    else EXPECT_EQ(bytes * 2, f32_bytes) << "type " << t;
    ASSERT_EQ(hw_session_prefill(s, tokens, 7), HW_OK) << hw_last_error();
    ASSERT_EQ(hw_session_decode(s, 11), HW_OK) << hw_last_error();
    const float* logits = nullptr;
    int vocab = 0;
    ASSERT_EQ(hw_session_logits(s, &logits, &vocab), HW_OK);

    // The C++ session of the same type, same threads: the same computation.
    SessionOptions co;
    co.threads = 1;
    co.max_context = 32;
    co.kv_type = static_cast<KvType>(t);
    std::unique_ptr<Session> cs;
    ASSERT_TRUE(cpp->open_session(co, &cs).ok());
    ASSERT_TRUE(cs->prefill(tokens, 7).ok());
    ASSERT_TRUE(cs->decode(11).ok());
    for (int i = 0; i < vocab; ++i) ASSERT_EQ(logits[i], cs->logits()[i]) << "type " << t << " logit " << i;
  }

  hw_session_options bad = {1, 32, 7};
  hw_session* s = reinterpret_cast<hw_session*>(0x1);
  EXPECT_EQ(hw_session_open(m.get(), &bad, &s), HW_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(hw_last_error()).find("kv_type 7"), std::string::npos) << hw_last_error();
  bad.kv_type = -1;
  EXPECT_EQ(hw_session_open(m.get(), &bad, &s), HW_ERR_INVALID_ARGUMENT);
  uint64_t bytes = 0;
  EXPECT_EQ(hw_session_kv_cache_bytes(nullptr, &bytes), HW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hw_last_error()).find("session is NULL"), std::string::npos) << hw_last_error();
}

}  // namespace
}  // namespace headwise::test
