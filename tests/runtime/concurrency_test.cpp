// Many application threads on one shared model (C++ API): 8 threads × 4 sessions each,
// every session generating greedily from its own prompt with threads = 1 per call, as a
// server would run them. The oracle is the same work done alone on one thread
// beforehand, on a separately loaded copy of the model (so the concurrent run starts
// with cold primitive caches and builds them under contention); outputs must be
// identical: same tokens, same text, the same logits bit for bit.
//
// Half of the threads step their sessions one at a time (decode), the other half
// together (Session::decode_batch, whose batch scratch is per calling thread). Each
// thread also tokenizes its prompts and opens its sessions itself, so the read-only
// model is shared by everything a serving thread does. Built with ThreadSanitizer
// (tests/runtime/run_tsan.sh) this is the race check; libgomp is not instrumented,
// hence threads = 1, whose parallel regions start no thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "headwise/headwise.h"
#include "headwise/model.hpp"
#include "tests/status_assert.hpp"

namespace headwise::test {
namespace {

constexpr int kThreads = 8, kSessionsPerThread = 4;

struct Output {
  std::vector<int32_t> tokens;  // generated ids
  std::string text;             // their pieces as llama2.c prints them
  std::vector<float> logits;    // after the last step
  std::string error;            // the first failure, if any
};

int32_t argmax(const float* p, int n) { return int32_t(std::max_element(p, p + n) - p); }

// One application thread's work: tokenize its prompts, open its sessions, prefill,
// then `steps` greedy tokens for every session, one at a time or batched.
std::vector<Output> serve(const Model& model, const std::vector<std::string>& prompts, bool batched,
                          int steps) {
  std::vector<Output> out(prompts.size());
  const int vocab = model.info().vocab_size;
  SessionOptions so;
  so.threads = 1;
  std::vector<std::unique_ptr<Session>> sessions(prompts.size());
  std::vector<int32_t> last(prompts.size());
  // Records the failure on session i's output and hands back what there is.
  auto fail = [&](size_t i, const Status& s) {
    out[i].error = s.message();
    return out;
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int32_t> ids = model.tokenizer()->encode(prompts[i], true);
    Status s = model.open_session(so, &sessions[i]);
    if (s.ok()) s = sessions[i]->prefill(ids);
    if (!s.ok()) return fail(i, s);
    last[i] = ids.back();
  }
  std::vector<Session*> all;
  for (auto& s : sessions) all.push_back(s.get());
  for (int step = 0; step < steps; ++step) {
    std::vector<int32_t> next(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      next[i] = argmax(sessions[i]->logits(), vocab);
      out[i].tokens.push_back(next[i]);
      out[i].text += model.tokenizer()->decode(last[i], next[i]);
      last[i] = next[i];
    }
    if (batched) {
      const Status s = Session::decode_batch(all.data(), next.data(), int(all.size()), 1);
      if (!s.ok()) return fail(0, s);
    } else {
      for (size_t i = 0; i < prompts.size(); ++i) {
        const Status s = sessions[i]->decode(next[i]);
        if (!s.ok()) return fail(i, s);
      }
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i)
    out[i].logits.assign(sessions[i]->logits(), sessions[i]->logits() + vocab);
  return out;
}

// 32 different prompts of different lengths.
std::vector<std::vector<std::string>> prompts_per_thread() {
  const char* who[] = {"a little girl", "a big dog", "a tiny bird", "a happy boy",
                       "an old man",    "a red ball", "a shy cat",  "a funny frog"};
  const char* start[] = {"Once upon a time, there was ", "One day, ", "Lily saw ",
                         "Tom and his mom found "};
  std::vector<std::vector<std::string>> p(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int j = 0; j < kSessionsPerThread; ++j)
      p[t].push_back(std::string(start[j]) + who[(t + j) % 8] + (t % 2 ? "." : ""));
  return p;
}

// Runs every thread's work alone first (on `reference`), then all threads at once on
// `shared`, and compares.
void run_concurrently(const Model& reference, const Model& shared, int steps) {
  const auto prompts = prompts_per_thread();
  std::vector<std::vector<Output>> alone(kThreads), together(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    alone[t] = serve(reference, prompts[t], t % 2 == 1, steps);
    for (const Output& o : alone[t]) ASSERT_EQ(o.error, "") << "thread " << t << " alone";
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { together[t] = serve(shared, prompts[t], t % 2 == 1, steps); });
  for (std::thread& th : threads) th.join();

  std::vector<std::string> distinct;
  for (int t = 0; t < kThreads; ++t)
    for (int j = 0; j < kSessionsPerThread; ++j) {
      SCOPED_TRACE("thread " + std::to_string(t) + ", session " + std::to_string(j) + ": \"" +
                   prompts[t][j] + "\"");
      const Output &a = alone[t][j], &b = together[t][j];
      EXPECT_EQ(b.error, "");
      ASSERT_EQ(a.tokens.size(), size_t(steps));
      EXPECT_EQ(b.tokens, a.tokens);
      EXPECT_EQ(b.text, a.text);
      ASSERT_EQ(b.logits.size(), a.logits.size());
      EXPECT_EQ(std::memcmp(b.logits.data(), a.logits.data(), a.logits.size() * sizeof(float)), 0);
      distinct.push_back(a.text);
    }
  // The prompts lead to different continuations, so a mix-up between sessions (one
  // session's cache read by another) could not go unnoticed.
  std::sort(distinct.begin(), distinct.end());
  EXPECT_GE(std::unique(distinct.begin(), distinct.end()) - distinct.begin(), kThreads * kSessionsPerThread / 2);
}

TEST(Concurrency, SharedTinyModel) {
  std::shared_ptr<const Model> reference, shared;
  HW_ASSERT_OK(Model::synthetic("tiny", 11, &reference));
  HW_ASSERT_OK(Model::synthetic("tiny", 11, &shared));
  run_concurrently(*reference, *shared, 24);
}

TEST(Concurrency, SharedStories260K) {
  const std::string dir = std::string(HEADWISE_SHARED_DIR) + "/models/stories260K/";
  if (!std::ifstream(dir + "stories260K.bin") || !std::ifstream(dir + "tok512.bin"))
    GTEST_SKIP() << "no " << dir << " (../shared/models)";
  ModelOptions o;
  o.tokenizer = dir + "tok512.bin";
  std::shared_ptr<const Model> reference, shared;
  Status s = Model::load(dir + "stories260K.bin", o, &reference);
  ASSERT_TRUE(s.ok()) << s.message();
  s = Model::load(dir + "stories260K.bin", o, &shared);
  ASSERT_TRUE(s.ok()) << s.message();
  run_concurrently(*reference, *shared, 40);
}

// The C API on one shared model handle: each thread tokenizes, opens a session,
// generates, and makes a call that fails with an id of its own. Its thread's message
// (hw_last_error) must name its own id, never another thread's, while all of them write
// the shared model's message (hw_tokenize into a too-small buffer) concurrently.
TEST(Concurrency, CApiSharedModelHandle) {
  hw_model* model = nullptr;
  ASSERT_EQ(hw_model_synthetic("tiny", 11, &model), HW_OK) << hw_last_error();
  const auto prompts = prompts_per_thread();
  auto generate = [&](int t, std::string* text, std::string* errors) {
    int32_t ids[128];
    int n = 0;
    hw_session* s = nullptr;
    const hw_session_options o{1, 0, HW_KV_F32};
    if (hw_tokenize(model, prompts[t][0].c_str(), 1, ids, 128, &n) != HW_OK ||
        hw_session_open(model, &o, &s) != HW_OK || hw_session_prefill(s, ids, n) != HW_OK) {
      *errors += hw_last_error();
      hw_session_close(s);
      return;
    }
    int32_t prev = ids[n - 1];
    for (int step = 0; step < 16; ++step) {
      const float* logits = nullptr;
      int vocab = 0, len = 0;
      char piece[32];
      if (hw_session_logits(s, &logits, &vocab) != HW_OK) break;
      const int32_t next = argmax(logits, vocab);
      if (hw_detokenize_piece(model, prev, next, piece, sizeof piece, &len) != HW_OK) break;
      *text += piece;
      if (hw_session_decode(s, next) != HW_OK) break;
      prev = next;
    }
    // Failures of this thread's own: a token id and a buffer size no other thread uses.
    const int32_t bad = 1000 + t;
    if (hw_session_decode(s, bad) == HW_OK) *errors += "decode of " + std::to_string(bad) + " succeeded; ";
    if (std::string(hw_last_error()).find("token id " + std::to_string(bad)) == std::string::npos)
      *errors += std::string("thread message '") + hw_last_error() + "' lacks " + std::to_string(bad) + "; ";
    if (std::string(hw_session_last_error(s)).find(std::to_string(bad)) == std::string::npos)
      *errors += std::string("session message '") + hw_session_last_error(s) + "'; ";
    if (hw_tokenize(model, "a longer text", 1, ids, t, &n) != HW_ERR_OUT_OF_RANGE ||
        std::string(hw_last_error()).find("holds " + std::to_string(t)) == std::string::npos)
      *errors += std::string("tokenize message '") + hw_last_error() + "'; ";
    hw_model_last_error(model);  // reads the shared message while others write it
    hw_session_close(s);
  };
  std::vector<std::string> alone(kThreads), text(kThreads), errors(kThreads);
  std::string unused;
  for (int t = 0; t < kThreads; ++t) generate(t, &alone[t], &unused);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { generate(t, &text[t], &errors[t]); });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_FALSE(alone[t].empty());
    EXPECT_EQ(text[t], alone[t]) << "thread " << t;
  }
  EXPECT_EQ(hw_model_free(model), HW_OK);
}

}  // namespace
}  // namespace headwise::test
