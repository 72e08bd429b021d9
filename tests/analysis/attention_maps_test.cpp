// Attention maps and head ablation (analysis/attention_maps.cpp). The maps are checked
// against two things they must agree with: the float64 reference kernel's weights
// (recovered by running attention_reference with one-hot V rows on the q/K the model
// really produced) and the fused kernel's actual output (maps · V). Ablation: the
// loss formula against one written here, a pass-through hook leaves it bit-identical,
// zeroing a head changes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "headwise/attention.hpp"
#include "headwise/model.hpp"
#include "headwise/analysis/attention_maps.hpp"
#include "tests/runtime/model_fixtures.hpp"
#include "tests/status_assert.hpp"

namespace headwise::test {
namespace {

const std::string kStories = HEADWISE_SHARED_DIR "/models/stories260K/";
constexpr const char* kPrompt = "The animal did not cross the street because it was too tired";

bool exists(const std::string& p) {
  std::FILE* f = std::fopen(p.c_str(), "rb");
  if (f) std::fclose(f);
  return f != nullptr;
}

// What one attention node saw and produced, copied out of a tap (one prefill chunk).
struct Seen {
  int heads = 0, kv_heads = 0, D = 0, T = 0;
  float scale = 0;
  std::vector<float> q, k, v, out;  // (T, heads·D), (T, kv_heads·D) ×2, (T, heads·D)
};

std::vector<Seen> capture(const Model& model, const std::vector<int32_t>& tokens) {
  std::vector<Seen> seen(model.info().n_layers);
  SessionOptions so;
  so.threads = 1;
  so.attention_hook = [&seen](const AttentionTap& t) {
    EXPECT_EQ(t.pos0, 0);
    EXPECT_EQ(t.rows, t.kv_len);
    Seen& s = seen[t.layer];
    s.heads = t.heads, s.kv_heads = t.kv_heads, s.D = t.head_dim, s.T = t.rows, s.scale = t.scale;
    auto rows = [&](const float* p, int64_t stride, int cols, std::vector<float>* to) {
      for (int r = 0; r < t.rows; ++r) to->insert(to->end(), p + r * stride, p + r * stride + cols);
    };
    rows(t.q, t.q_stride, t.heads * t.head_dim, &s.q);
    rows(t.k, t.kv_stride, t.kv_heads * t.head_dim, &s.k);
    rows(t.v, t.kv_stride, t.kv_heads * t.head_dim, &s.v);
    rows(t.out, t.out_stride, t.heads * t.head_dim, &s.out);
  };
  std::unique_ptr<Session> session;
  HW_EXPECT_OK(model.open_session(so, &session));
  HW_EXPECT_OK(session->prefill(tokens));
  return seen;
}

// The weights attention_reference implies: with V row j = e_c for j = b·D + c (zero
// elsewhere), output column c of head h is the weight on key b·D + c; ceil(T/D) runs
// recover every column.
std::vector<float> reference_weights(const Seen& s, int h) {
  const int T = s.T, D = s.D;
  std::vector<float> w(size_t(T) * T, -1.0f);
  for (int b = 0; b * D < T; ++b) {
    std::vector<float> v(size_t(T) * s.kv_heads * D, 0.0f), out(size_t(T) * s.heads * D);
    for (int c = 0; c < D && b * D + c < T; ++c)
      for (int kh = 0; kh < s.kv_heads; ++kh) v[size_t(b * D + c) * s.kv_heads * D + kh * D + c] = 1;
    AttentionParams p;
    p.q_len = p.kv_len = T;
    p.q_heads = s.heads, p.kv_heads = s.kv_heads, p.head_dim = D, p.scale = s.scale;
    const Status st = attention_reference(p, packed_input(s.q.data(), T, s.heads, D),
                                          packed_input(s.k.data(), T, s.kv_heads, D),
                                          packed_input(v.data(), T, s.kv_heads, D),
                                          packed_output(out.data(), T, s.heads, D));
    EXPECT_TRUE(st.ok()) << st.message();
    for (int i = 0; i < T; ++i)
      for (int c = 0; c < D && b * D + c < T; ++c)
        w[size_t(i) * T + b * D + c] = out[size_t(i) * s.heads * D + h * D + c];
  }
  return w;
}

void check_maps(const Model& model, const std::vector<int32_t>& tokens) {
  AttentionMaps maps;
  MapsRequest req;
  req.threads = 1;
  const Status st = attention_maps(model, tokens, req, &maps);
  ASSERT_TRUE(st.ok()) << st.message();
  const int T = static_cast<int>(tokens.size());
  ASSERT_EQ(maps.tokens, T);
  const std::vector<Seen> seen = capture(model, tokens);
  for (int l = 0; l < model.info().n_layers; ++l)
    for (int h = 0; h < model.info().n_heads; ++h) {
      SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
      ASSERT_TRUE(maps.has(l, h));
      const float* w = maps.map(l, h);
      const std::vector<float> ref = reference_weights(seen[l], h);
      const Seen& s = seen[l];
      const int kvh = h / (s.heads / s.kv_heads);
      double worst_ref = 0, worst_out = 0;
      for (int i = 0; i < T; ++i) {
        double sum = 0;
        for (int j = 0; j < T; ++j) {
          const float x = w[size_t(i) * T + j];
          if (j > i) {
            ASSERT_EQ(x, 0.0f) << "above the diagonal at " << i << "," << j;
          } else {
            ASSERT_GE(x, 0.0f);
          }
          sum += x;
          worst_ref = std::max(worst_ref, std::abs(double(x) - ref[size_t(i) * T + j]));
        }
        ASSERT_NEAR(sum, 1.0, 1e-5) << "row " << i;
        // The fused kernel's output is these weights applied to V.
        for (int d = 0; d < s.D; ++d) {
          double o = 0;
          for (int j = 0; j <= i; ++j)
            o += double(w[size_t(i) * T + j]) * s.v[size_t(j) * s.kv_heads * s.D + kvh * s.D + d];
          worst_out = std::max(worst_out, std::abs(o - s.out[size_t(i) * s.heads * s.D + h * s.D + d]));
        }
      }
      EXPECT_LT(worst_ref, 1e-6);
      EXPECT_LT(worst_out, 1e-4);
    }
}

TEST(AttentionMaps, TinySyntheticMatchesReferenceAndFusedOutput) {
  const auto m = tiny();
  // 40 tokens: more than head_dim (16), so the reference weights take 3 one-hot passes.
  check_maps(*m, m->tokenizer()->encode("the quick brown fox jumps over the lazy dog", true));
}

TEST(AttentionMaps, Stories260KMatchesReferenceAndFusedOutput) {
  if (!exists(kStories + "stories260K.bin")) GTEST_SKIP() << kStories << " is absent";
  const auto m = stories();
  check_maps(*m, m->tokenizer()->encode(kPrompt, true));
}

TEST(AttentionMaps, OnlyRequestedHeadsAndRangeErrors) {
  const auto m = tiny();
  const std::vector<int32_t> ids = m->tokenizer()->encode("hello there", true);
  AttentionMaps all, some;
  HW_ASSERT_OK(attention_maps(*m, ids, {}, &all));
  MapsRequest req;
  req.layers = {1};
  req.heads = {2, 0};
  HW_ASSERT_OK(attention_maps(*m, ids, req, &some));
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      const bool want = l == 1 && (h == 0 || h == 2);
      ASSERT_EQ(some.has(l, h), want) << l << "," << h;
      if (want) {
        EXPECT_EQ(some.w[l][h], all.w[l][h]);
      }
    }
  req.layers = {2};
  EXPECT_EQ(attention_maps(*m, ids, req, &some).code(), StatusCode::out_of_range);
  req.layers = {0};
  req.heads = {-1};
  EXPECT_EQ(attention_maps(*m, ids, req, &some).code(), StatusCode::out_of_range);
  EXPECT_EQ(attention_maps(*m, {}, {}, &some).code(), StatusCode::invalid_argument);
  EXPECT_EQ(attention_maps(*m, std::vector<int32_t>(m->info().max_seq_len + 1, 5), {}, &some).code(),
            StatusCode::out_of_range);
}

TEST(Ablation, LossFormulaAndBaselineIsExact) {
  const auto m = tiny();
  const std::vector<int32_t> ids = m->tokenizer()->encode("a cat sat on a mat", true);
  const int T = static_cast<int>(ids.size()), V = m->info().vocab_size;
  // Independent loss from a plain session's logits.
  SessionOptions so;
  so.all_logits = true;
  so.threads = 1;
  std::unique_ptr<Session> s;
  HW_ASSERT_OK(m->open_session(so, &s));
  HW_ASSERT_OK(s->prefill(ids));
  double want = 0;
  for (int i = 0; i + 1 < T; ++i) {
    const float* z = s->all_logits().data() + size_t(i) * V;
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(double(z[v]));
    want += std::log(sum) - z[ids[i + 1]];
  }
  want /= T - 1;

  double base = 0, passthrough = 0, nothing = 0;
  HW_ASSERT_OK(next_token_loss(*m, ids, AttentionHook(), 1, &base));
  EXPECT_NEAR(base, want, 1e-9);
  // An installed hook that changes nothing, and a zeroing hook aimed at no layer,
  // leave the loss bit for bit.
  HW_ASSERT_OK(next_token_loss(*m, ids, [](const AttentionTap&) {}, 1, &passthrough));
  HW_ASSERT_OK(next_token_loss(*m, ids, zero_head_hook(99, 0), 1, &nothing));
  EXPECT_EQ(passthrough, base);
  EXPECT_EQ(nothing, base);
  EXPECT_EQ(next_token_loss(*m, {ids[0]}, AttentionHook(), 1, &base).code(), StatusCode::invalid_argument);
}

TEST(Ablation, ZeroingTouchesExactlyTheHeadsColumns) {
  const auto m = tiny();
  const std::vector<int32_t> ids = m->tokenizer()->encode("zero one head", true);
  const int D = m->info().head_dim, H = m->info().n_heads;
  for (int head : {2, -1}) {
    const AttentionHook zero = zero_head_hook(1, head);
    int checked = 0;
    SessionOptions so;
    so.attention_hook = [&](const AttentionTap& t) {
      std::vector<float> before(t.out, t.out + (t.rows - 1) * t.out_stride + H * D);
      zero(t);
      for (int r = 0; r < t.rows; ++r)
        for (int c = 0; c < H * D; ++c) {
          const float now = t.out[r * t.out_stride + c], was = before[r * t.out_stride + c];
          const bool zeroed = t.layer == 1 && (head < 0 || c / D == head);
          ASSERT_EQ(now, zeroed ? 0.0f : was) << "layer " << t.layer << " row " << r << " col " << c;
          checked += zeroed && was != 0.0f;
        }
    };
    std::unique_ptr<Session> s;
    HW_ASSERT_OK(m->open_session(so, &s));
    HW_ASSERT_OK(s->prefill(ids));
    EXPECT_GE(checked, int(ids.size()) * D) << "nothing non-zero was zeroed";
  }
}

TEST(Ablation, ZeroingAHeadChangesTheLoss) {
  const auto m = tiny();
  const std::vector<int32_t> ids = m->tokenizer()->encode("the quick brown fox", true);
  double base = 0;
  HW_ASSERT_OK(next_token_loss(*m, ids, AttentionHook(), 1, &base));
  for (int l = 0; l < m->info().n_layers; ++l)
    for (int h = -1; h < m->info().n_heads; ++h) {
      double loss = 0;
      HW_ASSERT_OK(ablated_loss(*m, ids, l, h, 1, &loss));
      EXPECT_GT(std::abs(loss - base), 1e-6) << "layer " << l << " head " << h;
    }
  double loss;
  EXPECT_EQ(ablated_loss(*m, ids, 2, 0, 1, &loss).code(), StatusCode::out_of_range);
  EXPECT_EQ(ablated_loss(*m, ids, 0, 4, 1, &loss).code(), StatusCode::out_of_range);
  EXPECT_EQ(ablated_loss(*m, ids, 0, -2, 1, &loss).code(), StatusCode::out_of_range);
}

TEST(Ablation, Stories260KHeadsMatter) {
  if (!exists(kStories + "stories260K.bin")) GTEST_SKIP() << kStories << " is absent";
  const auto m = stories();
  const std::vector<int32_t> ids = m->tokenizer()->encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside.", true);
  double base = 0, layer0 = 0;
  HW_ASSERT_OK(next_token_loss(*m, ids, AttentionHook(), 1, &base));
  HW_ASSERT_OK(ablated_loss(*m, ids, 0, -1, 1, &layer0));
  // A trained model predicts its own kind of text well, and loses much of that
  // without its first attention layer.
  EXPECT_LT(base, 3.0);
  EXPECT_GT(layer0 - base, 0.1);
}

}  // namespace
}  // namespace headwise::test
