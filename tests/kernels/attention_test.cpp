// Every attention path of every line of the kernel list (attention.inc) whose ISA the CPU
// has — read from the list, so a new line is tested without an edit here — against the
// float64 reference, over the sweep the kernels promise:
// head_dim 1..256, sequence lengths around every tile edge, causal and bidirectional,
// MHA/GQA/MQA, batches, strided inputs from one fused QKV buffer, decode against long
// caches, padded batches; each with an fp32, f16 and bf16 K/V cache (16-bit also in the
// session's tiled layout), against the reference on the same rounded K/V. Tolerance: max abs error ≤ 1e-5 · max|V|
// (the vector lines measure below 5e-7 · max|V| here), and 2e-5 · max|V| for the amx
// lines' prefill, computed in split bf16 (attention_cases.hpp's kAmxRelTol says why).
#include <cstring>
#include <sstream>

#include "tests/kernels/attention_cases.hpp"

namespace headwise::test {
namespace {

struct Case {
  int B, Tq, Tk, Hq, Hkv, D;
  bool causal;
  bool padded;
};

std::string name_of(const Case& c) {
  std::ostringstream s;
  s << "b" << c.B << "q" << c.Tq << "k" << c.Tk << "h" << c.Hq << "kv" << c.Hkv << "d" << c.D
    << (c.causal ? "_causal" : "_full") << (c.padded ? "_padded" : "");
  return s.str();
}

// How GoogleTest prints a case (in failures and CTest's list): its shape, not bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << name_of(c); }

class AttentionSweep : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionSweep, EveryIsaAndPathMatchesReference) {
  const Case c = GetParam();
  AttnData data(c.B, c.Tq, c.Tk, c.Hq, c.Hkv, c.D, /*seed=*/c.Tq * 131 + c.D * 7 + c.B);
  if (c.padded) {
    // valid lengths: all, about half, none (that sequence's queries must give zeros)
    const int lens[] = {c.Tk, c.Tk / 2 + 1, 0};
    for (int b = 0; b < c.B; ++b) data.valid.push_back(lens[b % 3]);
  }

  int ran = 0;
  for (KvType kv : all_kv_types()) {
    kernels::attention_reference(data.problem(c.causal, data.ref.data(), kv));
    for (const AttnKernel& k : kernels::attn_kernels()) {
      if (k.kv_type != kv) continue;
      if (!kernels::may_use(k.isa)) {
        std::cout << "[ SKIPPED  ] " << k.name << ": CPU lacks " << kernels::isa_name(k.isa) << "\n";
        continue;
      }
      if (k.unit == kernels::AttnUnit::amx && !kernels::amx_usable()) {
        std::cout << "[ SKIPPED  ] " << k.name << ": no AMX here (or HEADWISE_AMX=0)\n";
        continue;
      }
      std::vector<AttnPath> paths = {AttnPath::prefill};
      if (c.Tq <= 64) paths.push_back(AttnPath::decode);
      for (AttnPath path : paths)
        for (int threads : {1, 2})
          for (bool tiled : {false, true}) {
            // The work split does not depend on the element type: 16-bit runs take 2
            // threads; they read the plain layout and the session's tiled one.
            if (kv != KvType::f32 && threads == 1) continue;
            if (kv == KvType::f32 && tiled) continue;
            std::fill(data.out.begin(), data.out.end(), NAN);
            run_kernel(k, tiled ? data.tiled_problem(c.causal, data.out.data(), kv)
                                : data.problem(c.causal, data.out.data(), kv),
                       threads, path);
            EXPECT_LE(max_abs_diff(data.out, data.ref), rel_tol(k, path) * data.max_abs_v())
                << k.name << (path == AttnPath::decode ? " decode" : " prefill") << " threads=" << threads
                << " kv=" << kv_type_name(kv) << (tiled ? " tiled" : "");
            ++ran;
            if (path == AttnPath::decode) {
              // Where the keys ahead are asked for (L1 or L2) changes no bit: the plan's
              // choice above, then each forced.
              const std::vector<float> planned = data.out;
              for (kernels::AttnAhead a : {kernels::AttnAhead::l1, kernels::AttnAhead::l2}) {
                std::fill(data.out.begin(), data.out.end(), NAN);
                run_kernel(k, tiled ? data.tiled_problem(c.causal, data.out.data(), kv)
                                    : data.problem(c.causal, data.out.data(), kv),
                           threads, path, a);
                EXPECT_EQ(0, std::memcmp(data.out.data(), planned.data(), planned.size() * sizeof(float)))
                    << k.name << " decode threads=" << threads << " kv=" << kv_type_name(kv) << (tiled ? " tiled" : "")
                    << " ahead " << kernels::attn_ahead_name(a);
              }
            }
          }
    }
  }
  EXPECT_GT(ran, 0);
}

std::vector<Case> sweep() {
  std::vector<Case> cases;
  // head_dim × sequence length × mask, GQA pair of heads
  for (int D : {1, 8, 32, 48, 64, 80, 96, 128, 160, 256})
    for (int T : {1, 2, 7, 63, 64, 65, 300, 1024})
      for (bool causal : {true, false}) {
        if (T == 1024 && D > 128 && !causal) continue;  // keep the float64 reference quick
        cases.push_back({1, T, T, 2, 1, D, causal, false});
      }
  // head layouts (MHA, GQA 2/4, MQA) × batch
  for (auto [hq, hkv] : {std::pair{1, 1}, {2, 2}, {4, 2}, {8, 2}, {8, 1}, {4, 1}})
    for (int B : {1, 3})
      for (bool causal : {true, false})
        for (int T : {65, 300}) cases.push_back({B, T, T, hq, hkv, 64, causal, false});
  // decode and chunked prefill against a long cache (4097: not a multiple of any tile)
  for (int Tq : {1, 5, 17})
    for (bool causal : {true, false}) {
      cases.push_back({1, Tq, 4097, 4, 2, 128, causal, false});
      cases.push_back({2, Tq, 4097, 8, 1, 64, causal, false});
    }
  // padded batches (one sequence has no valid key at all)
  for (int T : {1, 63, 200})
    for (bool causal : {true, false}) cases.push_back({3, T, T, 4, 2, 80, causal, true});
  cases.push_back({3, 1, 1000, 4, 4, 96, true, true});
  cases.push_back({3, 5, 1000, 4, 1, 96, false, true});
  // the edges of every tile attention.inc states (AVX2's 48-query tile included), for
  // prefill and for a chunk of queries against a longer cache
  for (const AttnKernel& t : kernels::attn_kernels()) {
    for (int T : {t.q_tile - 1, t.q_tile, t.q_tile + 1, 2 * t.q_tile - 1, 2 * t.q_tile + 1,
                  t.kv_tile - 1, t.kv_tile + 1, 2 * t.kv_tile + 1})
      if (T >= 1)
        for (bool causal : {true, false}) {
          cases.push_back({1, T, T, 2, 1, 64, causal, false});
          cases.push_back({1, T, T + t.kv_tile + 3, 4, 2, 40, causal, false});
        }
  }
  // one case per shape (the tiles of different lines overlap)
  std::vector<Case> unique;
  for (const Case& c : cases) {
    bool seen = false;
    for (const Case& u : unique) seen |= name_of(u) == name_of(c);
    if (!seen) unique.push_back(c);
  }
  return unique;
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionSweep, ::testing::ValuesIn(sweep()),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

}  // namespace
}  // namespace headwise::test
