// Hostile input to runtime/ (issue 12): tokenizer files that hold more than the
// vocabulary, NaN scores, FIFOs; sessions whose memory is checked before allocating;
// thread counts above the stated maximum; the C API's attention refusing sizes that
// would wrap instead of returning HW_OK without writing anything.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "headwise/headwise.h"
#include "headwise/model.hpp"
#include "headwise/tokenizer.hpp"
#include "tests/test_files.hpp"

namespace headwise {
namespace {

using test::expect_names;
using test::spit;
using test::TempDir;

// A tokenizer.bin of `n` one-byte pieces 'a', 'b', ... with the given scores.
std::string tokenizer_bytes(int n, float score = 0.0f) {
  std::string b;
  auto put = [&](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(int32_t(1));
  for (int i = 0; i < n; ++i) {
    put(score);
    put(int32_t(1));
    b += char('a' + i % 26);
  }
  return b;
}

TEST(HostileTokenizer, TrailingBytesAndMorePiecesThanTheVocabularyAreRefused) {
  TempDir dir;
  std::unique_ptr<Tokenizer> tok;
  spit(dir.file("t.bin"), tokenizer_bytes(10));
  ASSERT_TRUE(Tokenizer::load(dir.file("t.bin"), 10, &tok).ok());
  expect_names(Tokenizer::load(dir.file("t.bin"), 9, &tok), {"t.bin", "trailing bytes", "9 pieces"});
  spit(dir.file("junk.bin"), tokenizer_bytes(10) + "junk");
  expect_names(Tokenizer::load(dir.file("junk.bin"), 10, &tok), {"junk.bin", "trailing bytes"});
}

TEST(HostileTokenizer, NanScoresFifosAndHugeVocabulariesAreRefused) {
  TempDir dir;
  std::unique_ptr<Tokenizer> tok;
  spit(dir.file("nan.bin"), tokenizer_bytes(4, std::numeric_limits<float>::quiet_NaN()));
  expect_names(Tokenizer::load(dir.file("nan.bin"), 4, &tok), {"nan.bin", "token 0", "NaN"});
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_names(Tokenizer::load(fifo, 4, &tok), {fifo, "FIFO"});  // and did not block
  expect_names(Tokenizer::load(dir.file(""), 4, &tok), {"directory"});
  // 2^30 pieces of a 50-byte file: refused before 2^30 strings are allocated.
  spit(dir.file("small.bin"), tokenizer_bytes(4));
  expect_names(Tokenizer::load(dir.file("small.bin"), 1 << 30, &tok), {"small.bin", "1073741824 pieces"});
}

TEST(HostileTokenizer, ByteFallbackNeverLeavesASmallVocabulary) {
  // Found by fuzz/tokenizer_bin_fuzz: byte fallback ids (byte + 3) beyond a vocabulary
  // of fewer than 259 pieces made the merge loop read past the piece table.
  TempDir dir;
  spit(dir.file("t.bin"), tokenizer_bytes(5));
  std::unique_ptr<Tokenizer> tok;
  ASSERT_TRUE(Tokenizer::load(dir.file("t.bin"), 5, &tok).ok());
  for (int32_t id : tok->encode("ab\xff\x80zz \xc3\xa9", true)) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 5);
  }
}

TEST(HostileSession, MemoryIsCheckedBeforeAllocatingAndNamesTheNumbers) {
  std::shared_ptr<const Model> m;
  ASSERT_TRUE(Model::synthetic("tiny", 1, &m).ok());
  SessionOptions o;
  o.memory_limit = 4096;  // bytes: far below tiny's KV cache
  std::unique_ptr<Session> s;
  const Status st = m->open_session(o, &s);
  EXPECT_EQ(st.code(), StatusCode::out_of_memory);
  expect_names(st, {"KV cache", "max_context", "memory limit", std::to_string(m->info().max_seq_len) + " positions"});
  EXPECT_FALSE(s);
  o.memory_limit = 0;  // the memory available: tiny fits
  EXPECT_TRUE(m->open_session(o, &s).ok());
}

TEST(HostileSession, ThreadsAboveTheMaximumAreRefusedOrClamped) {
  std::shared_ptr<const Model> m;
  ASSERT_TRUE(Model::synthetic("tiny", 1, &m).ok());
  SessionOptions o;
  o.threads = kMaxThreads + 1;
  std::unique_ptr<Session> s;
  expect_names(m->open_session(o, &s), {"threads", std::to_string(kMaxThreads)});
  o.threads = 1;
  ASSERT_TRUE(m->open_session(o, &s).ok());
  s->set_threads(100000);
  EXPECT_EQ(s->threads(), kMaxThreads);
  s->set_threads(-5);
  EXPECT_EQ(s->threads(), 0);

  hw_model* hm = nullptr;
  ASSERT_EQ(hw_model_synthetic("tiny", 1, &hm), HW_OK);
  hw_session_options ho{kMaxThreads + 1, 0, HW_KV_F32};
  hw_session* hs = nullptr;
  EXPECT_EQ(hw_session_open(hm, &ho, &hs), HW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(hw_last_error(), "threads"), nullptr) << hw_last_error();
  ho.threads = 1;
  ASSERT_EQ(hw_session_open(hm, &ho, &hs), HW_OK);
  EXPECT_EQ(hw_session_set_threads(hs, 1 << 20), HW_ERR_INVALID_ARGUMENT);
  hw_session_close(hs);
  hw_model_free(hm);
}

TEST(HostileCApi, AttentionSizesThatWrapAreAnErrorNotOk) {
  // batch × q_heads = 2^32 + 2^16 wrapped to a task count <= 0 in int: the kernels ran
  // nothing and the call returned HW_OK with `out` unwritten.
  std::vector<float> q(64, 1.0f), out(64, -7.0f);
  hw_attention_params p{};
  p.batch = 65537;
  p.q_len = 1;
  p.kv_len = 1;
  p.q_heads = 65536;
  p.kv_heads = 1;
  p.head_dim = 1;
  p.causal = 1;
  const hw_status st = hw_attention_f32(&p, q.data(), nullptr, q.data(), nullptr, q.data(), nullptr,
                                        out.data(), nullptr);
  EXPECT_EQ(st, HW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(hw_last_error(), "batch"), nullptr) << hw_last_error();
  p.batch = 1;
  p.q_heads = 1;
  p.threads = kMaxThreads + 1;
  EXPECT_EQ(hw_attention_f32(&p, q.data(), nullptr, q.data(), nullptr, q.data(), nullptr, out.data(), nullptr),
            HW_ERR_INVALID_ARGUMENT);
  // The status codes of the two APIs agree (the C API casts one to the other).
  EXPECT_EQ(int(HW_ERR_OUT_OF_MEMORY), int(StatusCode::out_of_memory));
}

}  // namespace
}  // namespace headwise
