// Sessions: one-pass prefill, chunked prefill, token-by-token decode and batched decode
// must agree; bad tokens and context overflow are errors, not crashes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <fstream>
#include <random>

#include "graph/plan.hpp"
#include "headwise/model.hpp"
#include "kernels/dispatch.hpp"
#include "tests/runtime/model_fixtures.hpp"
#include "tests/status_assert.hpp"

namespace headwise::test {
namespace {

// Logits of every position, three ways: one prefill pass, prefill in chunks of 7, and
// one decode call per token. Tolerance: 1e-4 absolute on the logits.
void check_prefill_decode(const Model& m, int T, int threads) {
  const int V = m.info().vocab_size;
  const auto tokens = random_tokens(T, V, 3);
  SessionOptions all;
  all.all_logits = true;
  all.threads = threads;
  std::unique_ptr<Session> one, chunked, stepped;
  HW_ASSERT_OK(m.open_session(all, &one));
  HW_ASSERT_OK(one->prefill(tokens));
  ASSERT_EQ(one->all_logits().size(), size_t(T) * V);

  SessionOptions ch = all;
  ch.max_chunk = 7;
  HW_ASSERT_OK(m.open_session(ch, &chunked));
  std::vector<float> chunk_logits;
  for (int i = 0; i < T; i += 7) {
    const int n = std::min(7, T - i);
    HW_ASSERT_OK(chunked->prefill(tokens.data() + i, n));
    chunk_logits.insert(chunk_logits.end(), chunked->all_logits().begin(), chunked->all_logits().end());
  }
  EXPECT_LE(max_abs(one->all_logits().data(), chunk_logits.data(), chunk_logits.size()), 1e-4);

  SessionOptions dec;
  dec.threads = threads;
  HW_ASSERT_OK(m.open_session(dec, &stepped));
  double worst = 0;
  for (int i = 0; i < T; ++i) {
    HW_ASSERT_OK(stepped->decode(tokens[i]));
    worst = std::max(worst, max_abs(stepped->logits(), one->all_logits().data() + size_t(i) * V, V));
  }
  EXPECT_LE(worst, 1e-4) << "prefill vs token-by-token decode";
  EXPECT_EQ(stepped->position(), T);
  // The last position's logits are what logits() returns after a prefill.
  EXPECT_EQ(max_abs(one->logits(), one->all_logits().data() + size_t(T - 1) * V, V), 0.0);
}

TEST(Session, PrefillChunksAndDecodeAgreeTiny) {
  auto m = tiny();
  for (int threads : {1, 2}) check_prefill_decode(*m, 70, threads);
}

TEST(Session, PrefillChunksAndDecodeAgreeStories) {
  auto m = stories();
  if (!m) GTEST_SKIP() << "../shared/models not present";
  for (int threads : {1, 2}) check_prefill_decode(*m, 100, threads);
}

// decode_batch over sessions at different positions equals stepping each alone; sessions
// join and leave the batch between steps.
// S pairs of fresh sessions: one of each pair runs batched, the other alone.
using Sessions = std::vector<std::unique_ptr<Session>>;
void open_pairs(const Model& m, int S, Sessions* batch, Sessions* alone) {
  batch->resize(S);
  alone->resize(S);
  for (int s = 0; s < S; ++s) {
    HW_ASSERT_OK(m.open_session({}, &(*batch)[s]));
    HW_ASSERT_OK(m.open_session({}, &(*alone)[s]));
  }
}

TEST(Session, BatchedDecodeEqualsSingle) {
  auto m = tiny();
  const int V = m->info().vocab_size;
  const int S = 4;
  Sessions batch, alone;
  open_pairs(*m, S, &batch, &alone);
  for (int s = 0; s < S; ++s) {
    const auto prompt = random_tokens(5 + 9 * s, V, 11 + s);
    HW_ASSERT_OK(batch[s]->prefill(prompt));
    HW_ASSERT_OK(alone[s]->prefill(prompt));
  }
  std::mt19937 g(5);
  for (int step = 0; step < 12; ++step) {
    // members this step: everyone except one that sits out in turn
    std::vector<Session*> members;
    std::vector<int> idx;
    for (int s = 0; s < S; ++s)
      if (s != step % (S + 1)) {
        members.push_back(batch[s].get());
        idx.push_back(s);
      }
    std::vector<int32_t> tok(members.size());
    for (int32_t& t : tok) t = static_cast<int32_t>(g() % V);
    HW_ASSERT_OK(Session::decode_batch(members.data(), tok.data(), static_cast<int>(members.size())));
    for (size_t i = 0; i < members.size(); ++i) {
      HW_ASSERT_OK(alone[idx[i]]->decode(tok[i]));
      EXPECT_EQ(batch[idx[i]]->position(), alone[idx[i]]->position());
      EXPECT_LE(max_abs(batch[idx[i]]->logits(), alone[idx[i]]->logits(), V), 1e-5)
          << "step " << step << " session " << idx[i];
    }
  }
}

// step_batch mixes prompt chunks of several lengths with single decode tokens in one
// pass (the server's continuous batching); each session ends where it would alone, with
// the logits of its last token. Same tolerance as the batched decode above (the
// projections' rows run through other kernels at another M: a different summation order).
TEST(Session, StepBatchMixesPromptChunksAndDecodesEqualsSingle) {
  auto m = tiny();
  const int V = m->info().vocab_size;
  const int S = 5;
  Sessions batch, alone;
  open_pairs(*m, S, &batch, &alone);
  std::mt19937 g(7);
  for (int step = 0; step < 8; ++step) {
    // session s takes a chunk of (s + step) % 4 * 5 tokens (0 stands for one decode
    // token), so every step mixes lengths 1..16 and sessions change role over time
    std::vector<Session*> members;
    std::vector<int> counts;
    std::vector<int32_t> tokens;
    for (int s = 0; s < S; ++s) {
      if (s == step % (S + 1)) continue;  // one sits out in turn
      const int k = std::max(1, (s + step) % 4 * 5);
      members.push_back(batch[s].get());
      counts.push_back(k);
      for (int r = 0; r < k; ++r) tokens.push_back(static_cast<int32_t>(g() % V));
    }
    HW_ASSERT_OK(Session::step_batch(members.data(), tokens.data(), counts.data(), static_cast<int>(members.size())));
    size_t off = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      const int s = static_cast<int>(std::find_if(batch.begin(), batch.end(), [&](auto& b) { return b.get() == members[i]; }) -
                                     batch.begin());
      HW_ASSERT_OK(alone[s]->prefill(tokens.data() + off, counts[i]));
      off += counts[i];
      EXPECT_EQ(batch[s]->position(), alone[s]->position());
      EXPECT_LE(max_abs(batch[s]->logits(), alone[s]->logits(), V), 1e-5) << "step " << step << " session " << s;
    }
  }
  // A session with no tokens is an error naming it; nothing moves.
  Session* two[] = {batch[0].get(), batch[1].get()};
  const int counts[] = {1, 0};
  const int32_t tok[] = {3};
  const int pos0 = batch[0]->position();
  const Status st = Session::step_batch(two, tok, counts, 2);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("session 1"), std::string::npos) << st.message();
  EXPECT_EQ(batch[0]->position(), pos0);
}

TEST(Session, BadTokensAndOverflowAreErrors) {
  auto m = tiny();
  const int V = m->info().vocab_size;
  SessionOptions o;
  o.max_context = 16;
  std::unique_ptr<Session> s;
  HW_ASSERT_OK(m->open_session(o, &s));
  Status st = s->decode(V);
  EXPECT_EQ(st.code(), StatusCode::out_of_range);
  EXPECT_NE(st.message().find(std::to_string(V)), std::string::npos) << st.message();
  st = s->decode(-1);
  EXPECT_EQ(st.code(), StatusCode::out_of_range);
  std::vector<int32_t> many(17, 5);
  st = s->prefill(many);
  EXPECT_EQ(st.code(), StatusCode::out_of_range);
  EXPECT_NE(st.message().find("context of 16"), std::string::npos) << st.message();
  EXPECT_EQ(s->position(), 0);  // nothing was consumed
  HW_ASSERT_OK(s->prefill(std::vector<int32_t>(16, 5)));
  EXPECT_EQ(s->decode(5).code(), StatusCode::out_of_range);
  s->reset();
  HW_EXPECT_OK(s->decode(5));
  o.max_context = m->info().max_seq_len + 1;
  EXPECT_EQ(m->open_session(o, &s).code(), StatusCode::invalid_argument);
}

TEST(Session, ProfileCountsEveryOp) {
  auto m = tiny();
  SessionOptions o;
  o.profile = true;
  std::unique_ptr<Session> s;
  HW_ASSERT_OK(m->open_session(o, &s));
  const auto t0 = std::chrono::steady_clock::now();
  HW_ASSERT_OK(s->prefill(random_tokens(9, m->info().vocab_size, 1)));
  HW_ASSERT_OK(s->decode(3));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(s->timings().empty());
  double op_seconds = 0;
  for (const OpTiming& t : s->timings()) {
    EXPECT_EQ(t.calls, 2) << t.where;
    op_seconds += t.seconds;
    // 10 rows went through every projection (9 of the prompt, 1 decoded): 2·rows·K·N
    const graph::Node& n = m->plan().graph.nodes[t.node];
    if (n.op == graph::OpKind::linear) {
      EXPECT_DOUBLE_EQ(t.flops, 2.0 * 10 * n.K * n.N) << t.where;
    }
  }
  // The ops are timed inside the two calls: together they cannot take longer.
  EXPECT_GT(op_seconds, 0.0);
  EXPECT_LE(op_seconds, wall);
  EXPECT_EQ(s->trace().size(), 2 * s->timings().size());
}

// The ISA is decided when the plan is built (graph/plan.hpp): a model loaded under an
// override holds that ISA's kernels — element-wise, KV-cache converters, attention,
// projections — and keeps them when the override changes afterwards, so its logits stay
// bit-identical. (The old per-call lookup of the global ISA fails this whenever the two
// ISAs round differently, which the last line reports.)
TEST(Session, PlanKeepsItsIsaWhenTheOverrideChanges) {
  using kernels::Isa;
  if (!kernels::may_use(Isa::avx2)) GTEST_SKIP() << "the CPU has only the scalar kernels";
  const Isa best = kernels::detected_isa();
  auto load = [](Isa isa) {
    EXPECT_TRUE(kernels::set_isa_override(isa));
    std::shared_ptr<const Model> m = tiny();
    kernels::clear_isa_override();
    return m;
  };
  auto logits = [](const Model& m) {
    SessionOptions o;
    o.all_logits = true;
    o.threads = 2;
    o.kv_type = KvType::f16;  // the KV-cache converters run too
    std::unique_ptr<Session> s;
    EXPECT_TRUE(m.open_session(o, &s).ok());
    EXPECT_TRUE(s->prefill(random_tokens(20, m.info().vocab_size, 5)).ok());
    return s->all_logits();
  };
  const std::shared_ptr<const Model> scalar = load(Isa::scalar), fast = load(best);
  ASSERT_TRUE(scalar && fast);
  const graph::Plan& p = scalar->plan();
  EXPECT_EQ(p.isa, Isa::scalar);
  EXPECT_EQ(p.elementwise->isa, Isa::scalar);
  EXPECT_EQ(p.kv_convert->isa, Isa::scalar);
  EXPECT_EQ(p.attn_for(KvType::f16).isa, Isa::scalar);
  EXPECT_EQ(fast->plan().isa, best);
  EXPECT_EQ(fast->plan().elementwise->isa, best);

  const std::vector<float> before = logits(*scalar);
  ASSERT_TRUE(kernels::set_isa_override(best));
  const std::vector<float> after = logits(*scalar);
  kernels::clear_isa_override();
  ASSERT_EQ(before.size(), after.size());
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0);
  const std::vector<float> other = logits(*fast);
  std::cout << "[   INFO   ] scalar and " << kernels::isa_name(best) << " plans' logits differ by "
            << max_abs(before.data(), other.data(), before.size()) << "\n";
}

}  // namespace
}  // namespace headwise::test
