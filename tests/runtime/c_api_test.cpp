// The C API (runtime/c_api.cpp): every entry point, every NULL / invalid-argument path
// with a message naming the culprit (per thread and per handle), a model handle freed
// under open sessions, llama2.c's greedy run of stories260K reproduced byte for byte
// through C calls only, and batched decode equal to stepping each session alone while
// sessions join and leave the batch. The oracle for numbers is the C++ API the C API
// wraps, or stepping alone; for text, the reference implementation's output file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "headwise/headwise.h"
#include "headwise/model.hpp"
#include "headwise/sampler.hpp"
#include "tests/status_assert.hpp"

namespace headwise::test {
namespace {

const std::string kStories = std::string(HEADWISE_SHARED_DIR) + "/models/stories260K/";

bool file_exists(const std::string& p) { return std::ifstream(p).good(); }
bool have_stories() {
  return file_exists(kStories + "stories260K.bin") && file_exists(kStories + "tok512.bin");
}
#define REQUIRE_STORIES() \
  if (!have_stories()) GTEST_SKIP() << "no " << kStories << " (../shared/models)"

// Owning wrappers so a failed assertion does not leak handles.
struct ModelDel { void operator()(hw_model* m) const { hw_model_free(m); } };
struct SessionDel { void operator()(hw_session* s) const { hw_session_close(s); } };
struct SamplerDel { void operator()(hw_sampler* s) const { hw_sampler_free(s); } };
using ModelPtr = std::unique_ptr<hw_model, ModelDel>;
using SessionPtr = std::unique_ptr<hw_session, SessionDel>;
using SamplerPtr = std::unique_ptr<hw_sampler, SamplerDel>;

// A non-null value the API must overwrite with NULL when creating a handle fails.
template <class T>
T* poison() { return reinterpret_cast<T*>(uintptr_t(0x1)); }

ModelPtr tiny(uint64_t seed = 7) {
  hw_model* m = nullptr;
  EXPECT_EQ(hw_model_synthetic("tiny", seed, &m), HW_OK) << hw_last_error();
  return ModelPtr(m);
}
ModelPtr stories(bool with_tokenizer = true) {
  hw_model* m = nullptr;
  const std::string ckpt = kStories + "stories260K.bin", tok = kStories + "tok512.bin";
  EXPECT_EQ(hw_model_load(ckpt.c_str(), with_tokenizer ? tok.c_str() : nullptr, &m), HW_OK)
      << hw_last_error();
  return ModelPtr(m);
}
SessionPtr open(const hw_model* m, int threads = 1, int max_context = 0) {
  hw_session_options o{threads, max_context, HW_KV_F32};
  hw_session* s = nullptr;
  EXPECT_EQ(hw_session_open(m, &o, &s), HW_OK) << hw_last_error();
  return SessionPtr(s);
}
std::vector<float> logits_of(const hw_session* s) {
  const float* p = nullptr;
  int vocab = 0;
  EXPECT_EQ(hw_session_logits(s, &p, &vocab), HW_OK) << hw_last_error();
  return p ? std::vector<float>(p, p + vocab) : std::vector<float>();
}
int position_of(const hw_session* s) {
  int pos = -1;
  EXPECT_EQ(hw_session_position(s, &pos), HW_OK) << hw_last_error();
  return pos;
}
int32_t argmax(const std::vector<float>& v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());  // the first maximum
}
std::vector<int32_t> tokenize(const hw_model* m, const std::string& text, bool bos) {
  int n = 0;
  EXPECT_EQ(hw_tokenize(m, text.c_str(), bos, nullptr, 0, &n), text.empty() && !bos ? HW_OK : HW_ERR_OUT_OF_RANGE);
  std::vector<int32_t> ids(n);
  int n2 = -1;
  EXPECT_EQ(hw_tokenize(m, text.c_str(), bos, ids.data(), n, &n2), HW_OK) << hw_last_error();
  EXPECT_EQ(n2, n);
  return ids;
}
std::string piece(const hw_model* m, int32_t prev, int32_t tok) {
  char buf[64];
  int len = -1;
  EXPECT_EQ(hw_detokenize_piece(m, prev, tok, buf, sizeof buf, &len), HW_OK) << hw_last_error();
  return len >= 0 ? std::string(buf, size_t(len)) : std::string();
}

// A failing call: its code, and its message naming `culprit` both per thread and on the
// handle it was made on (when given).
#define EXPECT_FAILS(call, code, culprit)                                           \
  do {                                                                              \
    const hw_status st_ = (call);                                                   \
    EXPECT_EQ(st_, code) << #call << ": " << hw_last_error();                       \
    EXPECT_NE(std::string(hw_last_error()).find(culprit), std::string::npos)        \
        << #call << " said '" << hw_last_error() << "', not naming '" << culprit << "'"; \
  } while (0)

// ---- basics ----------------------------------------------------------------------------

TEST(CApi, IsaAndThreadMessage) {
  const std::string isa = hw_isa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "scalar") << isa;
  EXPECT_FAILS(hw_model_synthetic("nope", 1, nullptr), HW_ERR_INVALID_ARGUMENT, "out is NULL");
  // a success clears the thread's message
  ModelPtr m = tiny();
  EXPECT_STREQ(hw_last_error(), "");
}

TEST(CApi, SyntheticModelInfo) {
  ModelPtr m = tiny();
  struct hw_model_info i;
  std::memset(&i, 0xff, sizeof i);
  ASSERT_EQ(hw_model_info(m.get(), &i), HW_OK) << hw_last_error();
  // tiny: 2 layers, d 64, 4 heads over 2 kv heads, context 256; its character
  // vocabulary is 3 specials + 256 byte pieces + 95 printable ASCII + 26 " a".." z".
  EXPECT_EQ(i.vocab_size, 3 + 256 + 95 + 26);
  EXPECT_EQ(i.d_model, 64);
  EXPECT_EQ(i.n_layers, 2);
  EXPECT_EQ(i.n_heads, 4);
  EXPECT_EQ(i.n_kv_heads, 2);
  EXPECT_EQ(i.head_dim, 16);
  EXPECT_EQ(i.max_seq_len, 256);
  EXPECT_EQ(i.has_tokenizer, 1);
  EXPECT_EQ(i.bos_id, 1);
  EXPECT_EQ(i.eos_id, 2);

  hw_model* bad = poison<hw_model>();
  EXPECT_FAILS(hw_model_synthetic("nope", 1, &bad), HW_ERR_INVALID_ARGUMENT, "'nope'");
  EXPECT_EQ(bad, nullptr);
  EXPECT_FAILS(hw_model_synthetic(nullptr, 1, &bad), HW_ERR_INVALID_ARGUMENT, "name is NULL");
}

TEST(CApi, LoadErrorsNameTheFile) {
  hw_model* m = poison<hw_model>();
  const std::string missing = std::string(HEADWISE_SHARED_DIR) + "/models/no-such-model.bin";
  EXPECT_FAILS(hw_model_load(missing.c_str(), nullptr, &m), HW_ERR_NOT_FOUND, missing);
  EXPECT_EQ(m, nullptr);
  EXPECT_FAILS(hw_model_load(nullptr, nullptr, &m), HW_ERR_INVALID_ARGUMENT, "path is NULL");
  EXPECT_FAILS(hw_model_load(missing.c_str(), nullptr, nullptr), HW_ERR_INVALID_ARGUMENT, "out is NULL");
  if (!have_stories()) return;
  const std::string ckpt = kStories + "stories260K.bin", tok = kStories + "no-tok.bin";
  EXPECT_FAILS(hw_model_load(ckpt.c_str(), tok.c_str(), &m), HW_ERR_NOT_FOUND, tok);
  EXPECT_EQ(m, nullptr);
}

TEST(CApi, StoriesInfoAndMissingTokenizer) {
  REQUIRE_STORIES();
  ModelPtr m = stories();
  struct hw_model_info i;
  ASSERT_EQ(hw_model_info(m.get(), &i), HW_OK);
  // ../shared/models/README.md: dim 64, 5 layers, 8 heads, 4 kv heads, vocab 512, seq 512
  EXPECT_EQ(i.vocab_size, 512);
  EXPECT_EQ(i.d_model, 64);
  EXPECT_EQ(i.n_layers, 5);
  EXPECT_EQ(i.n_heads, 8);
  EXPECT_EQ(i.n_kv_heads, 4);
  EXPECT_EQ(i.head_dim, 8);
  EXPECT_EQ(i.max_seq_len, 512);
  EXPECT_EQ(i.has_tokenizer, 1);

  ModelPtr bare = stories(false);
  ASSERT_EQ(hw_model_info(bare.get(), &i), HW_OK);
  EXPECT_EQ(i.has_tokenizer, 0);
  EXPECT_EQ(i.bos_id, -1);
  int n = 0;
  int32_t ids[8];
  char buf[8];
  EXPECT_FAILS(hw_tokenize(bare.get(), "hi", 1, ids, 8, &n), HW_ERR_UNSUPPORTED, "no tokenizer");
  EXPECT_NE(std::string(hw_model_last_error(bare.get())).find("stories260K.bin"), std::string::npos)
      << hw_model_last_error(bare.get());
  EXPECT_FAILS(hw_detokenize_piece(bare.get(), 1, 5, buf, 8, &n), HW_ERR_UNSUPPORTED, "no tokenizer");
}

// ---- NULL and invalid arguments: every entry point ---------------------------------------

TEST(CApi, NullAndInvalidArguments) {
  ModelPtr m = tiny();
  SessionPtr s = open(m.get());
  hw_session* sp = s.get();
  const int32_t tok = 5;
  int n = 0;
  int32_t ids[4];
  char buf[8];
  const float* lp = nullptr;
  float logits[4] = {0, 1, 2, 3};
  struct hw_model_info info;
  hw_session_options bad_threads{-1, 0, HW_KV_F32}, big_context{1, 100000, HW_KV_F32};
  hw_session* out_s = poison<hw_session>();
  hw_sampler* out_smp = poison<hw_sampler>();
  const hw_model* no_model = nullptr;
  hw_session* no_session = nullptr;
  hw_sampler* no_sampler = nullptr;
  struct Case {
    std::function<hw_status()> call;
    hw_status code;
    std::string culprit;
  };
  const std::vector<Case> cases = {
      {[&] { return hw_model_info(no_model, &info); }, HW_ERR_INVALID_ARGUMENT, "hw_model_info: model is NULL"},
      {[&] { return hw_model_info(m.get(), nullptr); }, HW_ERR_INVALID_ARGUMENT, "hw_model_info: out is NULL"},
      {[&] { return hw_tokenize(no_model, "a", 1, ids, 4, &n); }, HW_ERR_INVALID_ARGUMENT, "hw_tokenize: model is NULL"},
      {[&] { return hw_tokenize(m.get(), nullptr, 1, ids, 4, &n); }, HW_ERR_INVALID_ARGUMENT, "text is NULL"},
      {[&] { return hw_tokenize(m.get(), "a", 1, ids, 4, nullptr); }, HW_ERR_INVALID_ARGUMENT, "n_out is NULL"},
      {[&] { return hw_tokenize(m.get(), "a", 1, nullptr, 4, &n); }, HW_ERR_INVALID_ARGUMENT, "out (with capacity > 0) is NULL"},
      {[&] { return hw_tokenize(m.get(), "a", 1, ids, -1, &n); }, HW_ERR_INVALID_ARGUMENT, "capacity -1"},
      {[&] { return hw_detokenize_piece(no_model, 1, 5, buf, 8, &n); }, HW_ERR_INVALID_ARGUMENT, "hw_detokenize_piece: model is NULL"},
      {[&] { return hw_detokenize_piece(m.get(), 1, 5, buf, 8, nullptr); }, HW_ERR_INVALID_ARGUMENT, "len_out is NULL"},
      {[&] { return hw_detokenize_piece(m.get(), 1, 5, nullptr, 8, &n); }, HW_ERR_INVALID_ARGUMENT, "buf (with capacity > 0) is NULL"},
      {[&] { return hw_detokenize_piece(m.get(), 1, 5, buf, -2, &n); }, HW_ERR_INVALID_ARGUMENT, "capacity -2"},
      {[&] { return hw_detokenize_piece(m.get(), 1, 380, buf, 8, &n); }, HW_ERR_OUT_OF_RANGE, "token id 380"},
      {[&] { return hw_detokenize_piece(m.get(), -1, 5, buf, 8, &n); }, HW_ERR_OUT_OF_RANGE, "prev id -1"},
      {[&] { return hw_session_open(no_model, nullptr, &out_s); }, HW_ERR_INVALID_ARGUMENT, "hw_session_open: model is NULL"},
      {[&] { return hw_session_open(m.get(), nullptr, nullptr); }, HW_ERR_INVALID_ARGUMENT, "hw_session_open: out is NULL"},
      {[&] { return hw_session_open(m.get(), &bad_threads, &out_s); }, HW_ERR_INVALID_ARGUMENT, "threads -1"},
      {[&] { return hw_session_open(m.get(), &big_context, &out_s); }, HW_ERR_INVALID_ARGUMENT, "max_context 100000"},
      {[&] { return hw_session_prefill(no_session, &tok, 1); }, HW_ERR_INVALID_ARGUMENT, "hw_session_prefill: session is NULL"},
      {[&] { return hw_session_prefill(sp, nullptr, 1); }, HW_ERR_INVALID_ARGUMENT, "tokens is NULL"},
      {[&] { return hw_session_prefill(sp, &tok, 0); }, HW_ERR_INVALID_ARGUMENT, "n is 0"},
      {[&] { return hw_session_decode(no_session, tok); }, HW_ERR_INVALID_ARGUMENT, "hw_session_decode: session is NULL"},
      {[&] { return hw_session_decode(sp, -3); }, HW_ERR_OUT_OF_RANGE, "token id -3"},
      {[&] { return hw_session_decode_batch(nullptr, &tok, 1, 0); }, HW_ERR_INVALID_ARGUMENT, "sessions is NULL"},
      {[&] { return hw_session_decode_batch(&sp, nullptr, 1, 0); }, HW_ERR_INVALID_ARGUMENT, "tokens is NULL"},
      {[&] { return hw_session_decode_batch(&sp, &tok, 0, 0); }, HW_ERR_INVALID_ARGUMENT, "n is 0"},
      {[&] { return hw_session_decode_batch(&sp, &tok, 1, -1); }, HW_ERR_INVALID_ARGUMENT, "threads -1"},
      {[&] { return hw_session_logits(no_session, &lp, &n); }, HW_ERR_INVALID_ARGUMENT, "hw_session_logits: session is NULL"},
      {[&] { return hw_session_logits(sp, nullptr, &n); }, HW_ERR_INVALID_ARGUMENT, "hw_session_logits: out is NULL"},
      {[&] { return hw_session_logits(sp, &lp, nullptr); }, HW_ERR_INVALID_ARGUMENT, "vocab is NULL"},
      {[&] { return hw_session_logits(sp, &lp, &n); }, HW_ERR_OUT_OF_RANGE, "no logits yet"},
      {[&] { return hw_session_position(no_session, &n); }, HW_ERR_INVALID_ARGUMENT, "hw_session_position: session is NULL"},
      {[&] { return hw_session_position(sp, nullptr); }, HW_ERR_INVALID_ARGUMENT, "hw_session_position: out is NULL"},
      {[&] { return hw_session_reset(no_session); }, HW_ERR_INVALID_ARGUMENT, "hw_session_reset: session is NULL"},
      {[&] { return hw_session_set_threads(no_session, 1); }, HW_ERR_INVALID_ARGUMENT, "hw_session_set_threads: session is NULL"},
      {[&] { return hw_session_set_threads(sp, -4); }, HW_ERR_INVALID_ARGUMENT, "threads -4"},
      {[&] { return hw_sampler_new(4, 0.0f, 1.0f, 1, nullptr); }, HW_ERR_INVALID_ARGUMENT, "hw_sampler_new: out is NULL"},
      {[&] { return hw_sampler_new(0, 0.0f, 1.0f, 1, &out_smp); }, HW_ERR_INVALID_ARGUMENT, "vocab 0"},
      {[&] { return hw_sampler_new(4, 0.8f, 1.0f, 0, &out_smp); }, HW_ERR_INVALID_ARGUMENT, "seed is 0"},
      {[&] { return hw_sampler_sample(no_sampler, logits, &n); }, HW_ERR_INVALID_ARGUMENT, "hw_sampler_sample: sampler is NULL"},
      {[&] { return hw_attention_f32(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr); },
       HW_ERR_INVALID_ARGUMENT, "params is NULL"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.culprit);
    EXPECT_FAILS(c.call(), c.code, c.culprit);
  }
  // Creating functions leave *out NULL on failure.
  EXPECT_EQ(out_s, nullptr);
  EXPECT_EQ(out_smp, nullptr);
  // The failed session calls left it untouched.
  EXPECT_EQ(position_of(sp), 0);

  // hw_sampler_sample's other pointers (needs a sampler).
  hw_sampler* smp = nullptr;
  ASSERT_EQ(hw_sampler_new(4, 0.0f, 1.0f, 1, &smp), HW_OK);
  SamplerPtr smp_owner(smp);
  int32_t id = 0;
  EXPECT_FAILS(hw_sampler_sample(smp, nullptr, &id), HW_ERR_INVALID_ARGUMENT, "logits is NULL");
  EXPECT_FAILS(hw_sampler_sample(smp, logits, nullptr), HW_ERR_INVALID_ARGUMENT, "out is NULL");

  // A NULL entry inside the batch, at index 1.
  hw_session* with_null[2] = {sp, nullptr};
  const int32_t two[2] = {5, 6};
  EXPECT_FAILS(hw_session_decode_batch(with_null, two, 2, 0), HW_ERR_INVALID_ARGUMENT, "sessions[1] is NULL");

  // Message getters never crash on NULL; release functions accept NULL like free().
  EXPECT_NE(std::string(hw_model_last_error(nullptr)).find("NULL"), std::string::npos);
  EXPECT_NE(std::string(hw_session_last_error(nullptr)).find("NULL"), std::string::npos);
  EXPECT_EQ(hw_model_free(nullptr), HW_OK);
  EXPECT_EQ(hw_session_close(nullptr), HW_OK);
  EXPECT_EQ(hw_sampler_free(nullptr), HW_OK);
}

TEST(CApi, MessagesPerHandle) {
  ModelPtr m = tiny();
  SessionPtr a = open(m.get()), b = open(m.get());
  const int32_t bad = 999;
  EXPECT_FAILS(hw_session_decode(a.get(), bad), HW_ERR_OUT_OF_RANGE, "token id 999");
  const std::string msg = hw_session_last_error(a.get());
  EXPECT_EQ(msg, hw_last_error());
  EXPECT_NE(msg.find("hw_session_decode"), std::string::npos) << msg;
  // Another handle's success clears the thread's message but not a's.
  const int32_t ok = 5;
  ASSERT_EQ(hw_session_decode(b.get(), ok), HW_OK);
  EXPECT_STREQ(hw_last_error(), "");
  EXPECT_EQ(hw_session_last_error(a.get()), msg);
  EXPECT_STREQ(hw_session_last_error(b.get()), "");
  // a's own next success clears it
  ASSERT_EQ(hw_session_decode(a.get(), ok), HW_OK);
  EXPECT_STREQ(hw_session_last_error(a.get()), "");

  int n = 0;
  int32_t one[1];
  EXPECT_FAILS(hw_tokenize(m.get(), "hello", 1, one, 1, &n), HW_ERR_OUT_OF_RANGE, "holds 1");
  EXPECT_STREQ(hw_model_last_error(m.get()), hw_last_error());
  struct hw_model_info info;
  ASSERT_EQ(hw_model_info(m.get(), &info), HW_OK);
  EXPECT_STREQ(hw_model_last_error(m.get()), "");
}

// ---- errors that name the culprit ----------------------------------------------------------

TEST(CApi, TokenOutOfRangeAndContextOverflow) {
  ModelPtr m = tiny();
  SessionPtr s = open(m.get(), 1, 8);
  const int32_t prompt[3] = {1, 70, 380};  // 380 = vocab size, one past the last id
  EXPECT_FAILS(hw_session_prefill(s.get(), prompt, 3), HW_ERR_OUT_OF_RANGE, "token id 380 (at index 2)");
  EXPECT_NE(std::string(hw_last_error()).find("0..379"), std::string::npos) << hw_last_error();
  EXPECT_EQ(position_of(s.get()), 0);  // nothing ran

  const std::vector<int32_t> nine(9, 70);
  EXPECT_FAILS(hw_session_prefill(s.get(), nine.data(), 9), HW_ERR_OUT_OF_RANGE, "9 tokens at position 0");
  EXPECT_NE(std::string(hw_last_error()).find("context of 8"), std::string::npos) << hw_last_error();
  EXPECT_EQ(position_of(s.get()), 0);

  // Exactly full works; one more decode does not.
  ASSERT_EQ(hw_session_prefill(s.get(), nine.data(), 8), HW_OK) << hw_last_error();
  EXPECT_EQ(position_of(s.get()), 8);
  EXPECT_FAILS(hw_session_decode(s.get(), 70), HW_ERR_OUT_OF_RANGE, "1 tokens at position 8");
  EXPECT_EQ(position_of(s.get()), 8);

  // In a batch, the culprit session is named and no session advances.
  SessionPtr a = open(m.get()), b = open(m.get());
  ASSERT_EQ(hw_session_decode(a.get(), 1), HW_OK);
  ASSERT_EQ(hw_session_decode(b.get(), 1), HW_OK);
  hw_session* batch[3] = {a.get(), b.get(), s.get()};
  const int32_t toks[3] = {70, 71, 72};
  EXPECT_FAILS(hw_session_decode_batch(batch, toks, 3, 1), HW_ERR_OUT_OF_RANGE, "session 2");
  EXPECT_NE(std::string(hw_session_last_error(a.get())).find("session 2"), std::string::npos);
  EXPECT_EQ(position_of(a.get()), 1);
  EXPECT_EQ(position_of(b.get()), 1);
  const int32_t bad_toks[2] = {70, -5};
  EXPECT_FAILS(hw_session_decode_batch(batch, bad_toks, 2, 1), HW_ERR_OUT_OF_RANGE, "token id -5");
  hw_session* twice[2] = {a.get(), a.get()};
  EXPECT_FAILS(hw_session_decode_batch(twice, toks, 2, 1), HW_ERR_INVALID_ARGUMENT, "appears twice");
  ModelPtr other = tiny(8);
  SessionPtr c = open(other.get());
  hw_session* mixed[2] = {a.get(), c.get()};
  EXPECT_FAILS(hw_session_decode_batch(mixed, toks, 2, 1), HW_ERR_INVALID_ARGUMENT, "another model");
  EXPECT_EQ(position_of(a.get()), 1);
}

// ---- tokenizer ---------------------------------------------------------------------------

TEST(CApi, TokenizeMatchesCppAndRoundTrips) {
  ModelPtr m = tiny();
  std::shared_ptr<const Model> cpp;
  HW_ASSERT_OK(Model::synthetic("tiny", 7, &cpp));
  const std::string text = "hello world, C API!";
  const std::vector<int32_t> ids = tokenize(m.get(), text, true);
  EXPECT_EQ(ids, cpp->tokenizer()->encode(text, true));
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(tokenize(m.get(), text, false), cpp->tokenizer()->encode(text, false));

  // Too small: nothing written, the size needed reported.
  std::vector<int32_t> small(ids.size() - 1, -7);
  int n = 0;
  EXPECT_FAILS(hw_tokenize(m.get(), text.c_str(), 1, small.data(), int(small.size()), &n),
               HW_ERR_OUT_OF_RANGE, std::to_string(ids.size()) + " tokens");
  EXPECT_EQ(n, int(ids.size()));
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](int32_t v) { return v == -7; }));
  // Empty text without BOS is zero tokens, which fits in zero capacity.
  EXPECT_EQ(hw_tokenize(m.get(), "", 0, nullptr, 0, &n), HW_OK);
  EXPECT_EQ(n, 0);

  // Pieces after BOS concatenate back to the text (the dummy-prefix space dropped).
  std::string back;
  for (size_t i = 1; i < ids.size(); ++i) back += piece(m.get(), ids[i - 1], ids[i]);
  EXPECT_EQ(back, text);

  // " w" is 2 bytes and needs capacity 3 for the NUL.
  int32_t sp_w = -1;
  for (int32_t id = 0; id < 380; ++id)
    if (cpp->tokenizer()->piece(id) == " w") sp_w = id;
  ASSERT_GE(sp_w, 0);
  char buf[3] = {'x', 'x', 'x'};
  int len = -1;
  EXPECT_FAILS(hw_detokenize_piece(m.get(), 70, sp_w, buf, 2, &len), HW_ERR_OUT_OF_RANGE, "room for 3");
  EXPECT_EQ(len, 2);
  EXPECT_EQ(buf[0], 'x');
  ASSERT_EQ(hw_detokenize_piece(m.get(), 70, sp_w, buf, 3, &len), HW_OK);
  EXPECT_STREQ(buf, " w");
  // After BOS the leading space goes.
  ASSERT_EQ(hw_detokenize_piece(m.get(), 1, sp_w, buf, 3, &len), HW_OK);
  EXPECT_STREQ(buf, "w");
  EXPECT_EQ(len, 1);
  // Size query.
  EXPECT_EQ(hw_detokenize_piece(m.get(), 70, sp_w, nullptr, 0, &len), HW_ERR_OUT_OF_RANGE);
  EXPECT_EQ(len, 2);
}

// ---- sessions ----------------------------------------------------------------------------

TEST(CApi, SessionMatchesCppAndResets) {
  ModelPtr m = tiny();
  std::shared_ptr<const Model> cpp;
  HW_ASSERT_OK(Model::synthetic("tiny", 7, &cpp));
  SessionOptions so;
  so.threads = 1;
  std::unique_ptr<Session> ref;
  HW_ASSERT_OK(cpp->open_session(so, &ref));

  const std::vector<int32_t> prompt = {1, 70, 71, 72, 73, 300};
  SessionPtr s = open(m.get(), 1);
  ASSERT_EQ(hw_session_prefill(s.get(), prompt.data(), int(prompt.size())), HW_OK) << hw_last_error();
  HW_ASSERT_OK(ref->prefill(prompt));
  EXPECT_EQ(position_of(s.get()), 6);
  const float* p = nullptr;
  int vocab = 0;
  ASSERT_EQ(hw_session_logits(s.get(), &p, &vocab), HW_OK);
  ASSERT_EQ(vocab, 380);
  // Same weights (same seed), same path, same thread count: the same bits.
  EXPECT_EQ(std::memcmp(p, ref->logits(), sizeof(float) * 380), 0);
  const std::vector<float> after_prompt(p, p + vocab);

  ASSERT_EQ(hw_session_decode(s.get(), 80), HW_OK);
  HW_ASSERT_OK(ref->decode(80));
  EXPECT_EQ(position_of(s.get()), 7);
  EXPECT_EQ(std::memcmp(logits_of(s.get()).data(), ref->logits(), sizeof(float) * 380), 0);

  ASSERT_EQ(hw_session_reset(s.get()), HW_OK);
  EXPECT_EQ(position_of(s.get()), 0);
  EXPECT_FAILS(hw_session_logits(s.get(), &p, &vocab), HW_ERR_OUT_OF_RANGE, "no logits yet");
  ASSERT_EQ(hw_session_prefill(s.get(), prompt.data(), int(prompt.size())), HW_OK);
  EXPECT_EQ(logits_of(s.get()), after_prompt);

  // More threads: the same numbers up to float reassociation in the GEMMs.
  ASSERT_EQ(hw_session_set_threads(s.get(), 2), HW_OK);
  ASSERT_EQ(hw_session_reset(s.get()), HW_OK);
  ASSERT_EQ(hw_session_prefill(s.get(), prompt.data(), int(prompt.size())), HW_OK);
  const std::vector<float> two = logits_of(s.get());
  for (int i = 0; i < 380; ++i) ASSERT_NEAR(two[i], after_prompt[i], 1e-4f) << i;

  // NULL options and an all-zero struct both mean defaults (full context).
  hw_session* d = nullptr;
  ASSERT_EQ(hw_session_open(m.get(), nullptr, &d), HW_OK);
  SessionPtr d_owner(d);
  const std::vector<int32_t> full(256, 70);
  EXPECT_EQ(hw_session_prefill(d, full.data(), 256), HW_OK) << hw_last_error();
  EXPECT_EQ(position_of(d), 256);
}

TEST(CApi, ModelFreedWhileSessionsOpen) {
  const std::vector<int32_t> prompt = {1, 70, 71, 72};
  ModelPtr keep = tiny();
  SessionPtr ref = open(keep.get());
  ASSERT_EQ(hw_session_prefill(ref.get(), prompt.data(), 4), HW_OK);
  ASSERT_EQ(hw_session_decode(ref.get(), 90), HW_OK);

  hw_model* m = nullptr;
  ASSERT_EQ(hw_model_synthetic("tiny", 7, &m), HW_OK);
  SessionPtr s = open(m), t = open(m);
  ASSERT_EQ(hw_model_free(m), HW_OK);  // the sessions hold the model now
  ASSERT_EQ(hw_session_prefill(s.get(), prompt.data(), 4), HW_OK) << hw_last_error();
  ASSERT_EQ(hw_session_decode(s.get(), 90), HW_OK) << hw_last_error();
  EXPECT_EQ(logits_of(s.get()), logits_of(ref.get()));
  s.reset();  // one of two sessions closes; the other still works
  ASSERT_EQ(hw_session_prefill(t.get(), prompt.data(), 4), HW_OK);
  ASSERT_EQ(hw_session_decode(t.get(), 90), HW_OK);
  EXPECT_EQ(logits_of(t.get()), logits_of(ref.get()));
}

// ---- sampler -----------------------------------------------------------------------------

TEST(CApi, SamplerIsLlama2cSampler) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 0.0f, 1.0f, 2.0f};
  hw_sampler* g = nullptr;
  ASSERT_EQ(hw_sampler_new(8, 0.0f, 1.0f, 0, &g), HW_OK) << hw_last_error();  // seed unused when greedy
  SamplerPtr g_owner(g);
  int32_t id = -1;
  ASSERT_EQ(hw_sampler_sample(g, logits.data(), &id), HW_OK);
  EXPECT_EQ(id, 1);  // the first of two maxima

  // Temperature and top-p: draw for draw the C++ Sampler with the same seed.
  for (float top_p : {1.0f, 0.9f}) {
    hw_sampler* s = nullptr;
    ASSERT_EQ(hw_sampler_new(8, 1.3f, top_p, 42, &s), HW_OK);
    SamplerPtr s_owner(s);
    Sampler ref(8, 1.3f, top_p, 42);
    std::vector<int32_t> got, want;
    for (int i = 0; i < 64; ++i) {
      ASSERT_EQ(hw_sampler_sample(s, logits.data(), &id), HW_OK);
      got.push_back(id);
      want.push_back(ref.sample(logits.data()));
    }
    EXPECT_EQ(got, want) << "top_p " << top_p;
    // and it is really sampling, not stuck on one id
    EXPECT_GT(std::set<int32_t>(got.begin(), got.end()).size(), 2u);
  }
}

// ---- attention ---------------------------------------------------------------------------

TEST(CApi, AttentionMatchesNaiveSoftmax) {
  // 1 sequence, 2 queries over 3 keys, 2 query heads sharing 1 kv head, head_dim 4,
  // causal: query i sees keys 0..1+i. Reference: the formula in the header, written out.
  const int Tq = 2, Tk = 3, H = 2, D = 4;
  std::vector<float> q(Tq * H * D), k(Tk * D), v(Tk * D), out(Tq * H * D, -1.0f);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.7f * float(i));
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.3f * float(i));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * float(i) - 0.4f;
  hw_attention_params p{};
  p.batch = 1;
  p.q_len = Tq;
  p.kv_len = Tk;
  p.q_heads = H;
  p.kv_heads = 1;
  p.head_dim = D;
  p.causal = 1;
  p.threads = 1;
  ASSERT_EQ(hw_attention_f32(&p, q.data(), nullptr, k.data(), nullptr, v.data(), nullptr, out.data(), nullptr),
            HW_OK)
      << hw_last_error();
  for (int i = 0; i < Tq; ++i)
    for (int h = 0; h < H; ++h) {
      const int keys = Tk - Tq + i + 1;
      std::vector<double> w(keys);
      double mx = -1e30, sum = 0;
      for (int j = 0; j < keys; ++j) {
        double d = 0;
        for (int c = 0; c < D; ++c) d += double(q[(i * H + h) * D + c]) * k[j * D + c];
        w[j] = d / std::sqrt(double(D));
        mx = std::max(mx, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int c = 0; c < D; ++c) {
        double o = 0;
        for (int j = 0; j < keys; ++j) o += w[j] / sum * v[j * D + c];
        EXPECT_NEAR(out[(i * H + h) * D + c], o, 1e-5) << i << "," << h << "," << c;
      }
    }
  EXPECT_FAILS(hw_attention_f32(&p, nullptr, nullptr, k.data(), nullptr, v.data(), nullptr, out.data(), nullptr),
               HW_ERR_INVALID_ARGUMENT, "q is a null pointer");
}

// ---- llama2.c's greedy run, through C calls only --------------------------------------------

TEST(CApi, GreedyStories260KMatchesReference) {
  REQUIRE_STORIES();
  const std::string expected_path = kStories + "expected-greedy-200.txt";
  std::ifstream f(expected_path, std::ios::binary);
  ASSERT_TRUE(f) << expected_path;
  const std::string expected((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());

  ModelPtr m = stories();
  struct hw_model_info info;
  ASSERT_EQ(hw_model_info(m.get(), &info), HW_OK);
  SessionPtr s = open(m.get(), 1);
  hw_sampler* smp = nullptr;
  ASSERT_EQ(hw_sampler_new(info.vocab_size, 0.0f, 0.9f, 1, &smp), HW_OK);
  SamplerPtr smp_owner(smp);

  // llama2.c's generate() with no prompt: BOS at position 0, then the argmax at each
  // step, printing decode(prev, next); 200 steps count position 0; stop on BOS; a
  // newline at the end.
  const std::vector<int32_t> prompt = tokenize(m.get(), "", true);
  ASSERT_EQ(prompt, std::vector<int32_t>{info.bos_id});
  ASSERT_EQ(hw_session_prefill(s.get(), prompt.data(), 1), HW_OK) << hw_last_error();
  const int steps = 200;
  std::string text;
  int32_t token = prompt[0];
  for (int pos = 1; pos <= steps; ++pos) {
    const float* logits = nullptr;
    int vocab = 0;
    ASSERT_EQ(hw_session_logits(s.get(), &logits, &vocab), HW_OK);
    int32_t next = -1;
    ASSERT_EQ(hw_sampler_sample(smp, logits, &next), HW_OK);
    if (next == info.bos_id) break;
    text += piece(m.get(), token, next);
    if (pos == steps) break;
    ASSERT_EQ(hw_session_decode(s.get(), next), HW_OK) << hw_last_error();
    token = next;
  }
  text += "\n";
  EXPECT_EQ(text, expected);
  EXPECT_EQ(position_of(s.get()), steps);
}

// ---- batched decode == stepping alone ---------------------------------------------------------

// Four sessions prefilled to different lengths; each step a different subset of them
// (joining, leaving, rejoining) goes through hw_session_decode_batch while a twin of
// each member takes the same token alone. The twins' logits are the oracle.
void batch_equals_alone(const hw_model* m) {
  const std::vector<std::vector<int32_t>> prompts = {
      {1}, {1, 300, 301}, {1, 80, 81, 82, 83, 84, 85}, {1, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100}};
  const int S = int(prompts.size());
  std::vector<SessionPtr> batched, alone;
  for (int i = 0; i < S; ++i) {
    batched.push_back(open(m, 1));
    alone.push_back(open(m, 1));
    ASSERT_EQ(hw_session_prefill(batched[i].get(), prompts[i].data(), int(prompts[i].size())), HW_OK);
    ASSERT_EQ(hw_session_prefill(alone[i].get(), prompts[i].data(), int(prompts[i].size())), HW_OK);
  }
  // Members per step: all, a pair, three, one (n = 1 path), all with 2 threads, ...
  const std::vector<std::vector<int>> schedule = {{0, 1, 2, 3}, {1, 3}, {3, 0, 2}, {2}, {0, 1, 2, 3},
                                                  {2, 1},       {0, 3}, {1, 2, 3, 0}, {0, 1, 2, 3}};
  const std::vector<int> threads = {1, 1, 0, 1, 2, 1, 1, 1, 1};
  for (size_t step = 0; step < schedule.size(); ++step) {
    std::vector<hw_session*> members;
    std::vector<int32_t> tokens;
    for (int i : schedule[step]) {
      members.push_back(batched[i].get());
      tokens.push_back(argmax(logits_of(alone[i].get())));  // greedy on the oracle's logits
    }
    ASSERT_EQ(hw_session_decode_batch(members.data(), tokens.data(), int(members.size()), threads[step]), HW_OK)
        << hw_last_error();
    for (size_t j = 0; j < members.size(); ++j) {
      const int i = schedule[step][j];
      ASSERT_EQ(hw_session_decode(alone[i].get(), tokens[j]), HW_OK);
      ASSERT_EQ(position_of(batched[i].get()), position_of(alone[i].get()));
      const std::vector<float> got = logits_of(batched[i].get()), want = logits_of(alone[i].get());
      ASSERT_EQ(got.size(), want.size());
      float worst = 0;
      for (size_t c = 0; c < got.size(); ++c) worst = std::max(worst, std::fabs(got[c] - want[c]));
      EXPECT_LE(worst, 1e-4f) << "step " << step << ", session " << i;
    }
  }
  // Every session moved the number of times it was scheduled.
  for (int i = 0; i < S; ++i) {
    int times = 0;
    for (const auto& members : schedule) times += int(std::count(members.begin(), members.end(), i));
    EXPECT_EQ(position_of(batched[i].get()), int(prompts[i].size()) + times) << i;
  }
}

TEST(CApi, DecodeBatchEqualsAloneTiny) {
  ModelPtr m = tiny();
  batch_equals_alone(m.get());
}

TEST(CApi, DecodeBatchEqualsAloneStories260K) {
  REQUIRE_STORIES();
  ModelPtr m = stories();
  batch_equals_alone(m.get());
}

}  // namespace
}  // namespace headwise::test
