// What the library must not do behind the caller's back:
//  - change the calling thread's OpenMP settings (omp_get_max_threads() is the same
//    before and after every public call, whatever `threads` the session was given);
//  - grow memory with the number of distinct prompt lengths (1,000 prefills of distinct
//    lengths: resident memory flat after the first few — a cache keyed on the row count,
//    as oneDNN primitives once were, grows by megabytes here).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <unistd.h>

#include "graph/presets.hpp"
#include "headwise/attention.hpp"
#include "headwise/headwise.h"
#include "headwise/model.hpp"
#include "runtime/model_builder.hpp"
#include "tests/status_assert.hpp"

namespace headwise::test {
namespace {

size_t resident_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return size_t(resident) * size_t(sysconf(_SC_PAGESIZE));
}

// A one-layer Llama small enough for a thousand prefills of up to 1,000 tokens.
std::shared_ptr<const Model> small_llama(int context) {
  graph::Settings s;
  s.vocab_size = 96;
  s.d_model = 32;
  s.n_layers = 1;
  s.n_heads = 2;
  s.n_kv_heads = 1;
  s.head_dim = 16;
  s.max_seq_len = context;
  graph::Preset p = graph::llama_preset(s, 48, false, "small");
  std::deque<std::vector<float>> data;
  std::vector<graph::TensorView> views;
  for (const graph::TensorSpec& t : p.tensors) {
    size_t n = 1;
    for (int64_t d : t.shape) n *= size_t(d);
    data.emplace_back(n);
    for (size_t i = 0; i < n; ++i)  // deterministic, unit-scale values
      data.back()[i] = t.fan_in == 0 ? 1.0f : std::sin(float(i) * 0.37f + float(n % 7)) / std::sqrt(float(t.fan_in));
    graph::TensorView v;
    v.name = t.name;
    v.dtype = graph::DType::f32;
    v.shape = t.shape;
    v.data = reinterpret_cast<const uint8_t*>(data.back().data());
    v.nbytes = n * sizeof(float);
    views.push_back(std::move(v));
  }
  p.desc.path = "small";
  std::shared_ptr<const Model> m;
  const Status st = ModelBuilder::finish(
      p.desc, graph::WeightSet::in_memory(std::move(views), std::move(data), "small"), nullptr, "small", &m);
  EXPECT_TRUE(st.ok()) << st.message();
  return m;
}

TEST(Resources, OpenMpSettingUnchangedByEveryPublicCall) {
  const int before = 3;  // anything but the default, so a reset to "all cores" shows
  omp_set_num_threads(before);
  auto same = [&](const char* call) { EXPECT_EQ(omp_get_max_threads(), before) << "after " << call; };
  std::shared_ptr<const Model> m;
  const Status st = Model::synthetic("tiny", 1, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  same("Model::synthetic");
  std::vector<int32_t> prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(3 + i);
  for (int threads : {0, 1, 2, 5}) {
    SessionOptions o;
    o.threads = threads;
    std::unique_ptr<Session> a, b;
    HW_ASSERT_OK(m->open_session(o, &a));
    HW_ASSERT_OK(m->open_session(o, &b));
    same("open_session");
    Status s = a->prefill(prompt);  // 40 rows: oneDNN row classes and the GEMV
    ASSERT_TRUE(s.ok()) << s.message();
    same("prefill");
    s = b->prefill(prompt.data(), 5);
    ASSERT_TRUE(s.ok()) << s.message();
    s = a->decode(7);
    ASSERT_TRUE(s.ok()) << s.message();
    same("decode");
    Session* both[] = {a.get(), b.get()};
    const int32_t next[] = {8, 9};
    s = Session::decode_batch(both, next, 2, threads);
    ASSERT_TRUE(s.ok()) << s.message();
    same("decode_batch");
  }
  std::vector<float> q(64 * 4 * 16, 0.1f), out(q.size());
  AttentionParams a;
  a.q_len = a.kv_len = 64;
  a.q_heads = a.kv_heads = 4;
  a.head_dim = 16;
  for (int threads : {0, 2}) {
    a.threads = threads;
    const Status s = attention(a, packed_input(q.data(), 64, 4, 16), packed_input(q.data(), 64, 4, 16),
                               packed_input(q.data(), 64, 4, 16), packed_output(out.data(), 64, 4, 16));
    ASSERT_TRUE(s.ok()) << s.message();
    same("attention");
  }
  hw_model* cm = nullptr;
  ASSERT_EQ(hw_model_synthetic("tiny", 2, &cm), HW_OK) << hw_last_error();
  hw_session* cs = nullptr;
  hw_session_options co = {0, 0, HW_KV_F32};
  ASSERT_EQ(hw_session_open(cm, &co, &cs), HW_OK) << hw_last_error();
  ASSERT_EQ(hw_session_prefill(cs, prompt.data(), int(prompt.size())), HW_OK) << hw_last_error();
  same("hw_session_prefill");
  ASSERT_EQ(hw_session_set_threads(cs, 2), HW_OK);
  ASSERT_EQ(hw_session_decode(cs, 5), HW_OK) << hw_last_error();
  same("hw_session_decode");
  hw_session_close(cs);
  hw_model_free(cm);
  omp_set_num_threads(omp_get_num_procs());
}

TEST(Resources, MemoryFlatOverAThousandDistinctPrefillLengths) {
  constexpr int kLengths = 1000;
  std::shared_ptr<const Model> m = small_llama(kLengths + 8);
  ASSERT_TRUE(m);
  SessionOptions o;
  o.threads = 1;  // one thread: no barriers to wait on when the test machine is loaded
  std::unique_ptr<Session> s;
  HW_ASSERT_OK(m->open_session(o, &s));
  std::vector<int32_t> tokens(kLengths);
  for (int i = 0; i < kLengths; ++i) tokens[i] = int32_t((i * 7 + 1) % 96);
  // Warm up with the longest prompt first (it sizes every buffer), then a few more.
  size_t after_warmup = 0;
  for (int i = 0; i < kLengths; ++i) {
    const int n = i == 0 ? kLengths : i;  // kLengths, then 1, 2, ..., 999
    s->reset();
    const Status st = s->prefill(tokens.data(), n);
    ASSERT_TRUE(st.ok()) << "length " << n << ": " << st.message();
    if (i == 8) after_warmup = resident_bytes();
  }
  const size_t end = resident_bytes();
  ASSERT_GT(after_warmup, 0u) << "/proc/self/statm unreadable";
  // Allowance: 4 MiB for allocator noise (gtest, libgomp, page-granular frees). One
  // oneDNN primitive per (projection, length) would add several megabytes per 100
  // lengths for this model.
  EXPECT_LE(end, after_warmup + (size_t(4) << 20))
      << "resident memory grew from " << after_warmup / 1024 << " KiB to " << end / 1024
      << " KiB over " << kLengths << " distinct prompt lengths";
}

}  // namespace
}  // namespace headwise::test
