// Decode with grouped-query attention on every line of the kernel list (attention.inc)
// whose ISA the CPU has: for G of 2, 4, 8 or the vector width the decode body takes the
// G query rows of a KV head together (attn_decode_impl.hpp: scores_group, pv_group),
// widening each K/V vector once for them; other G row by row. This checks the
// bookkeeping that introduces: G = 1, 2, 3, 4, 7, 8, 16 (grouped and not), a
// llama-1b-like 32/8 layout, several query positions per sequence (multi-row decode:
// causal rows of one group see different keys), cache lengths 1, kv_tile ± 1, several
// tiles and a long odd one, head_dim with and without a vector tail and wider than 4
// vectors (the accumulators split over d), f32/f16/bf16 caches, 1–3 threads (one chunk
// or split keys), against the float64 reference on the same rounded K/V.
// Tolerance: max abs error ≤ 1e-5 · max|V| (kRelTol, attention_cases.hpp): the inputs are
// identical, only fp32 summation order and the exp2 polynomial differ.
#include <sstream>

#include "tests/kernels/attention_cases.hpp"

namespace headwise::test {
namespace {

struct GqaCase {
  int B, Tq, Hq, Hkv, D;
};

std::string name_of(const GqaCase& c) {
  std::ostringstream s;
  s << "b" << c.B << "q" << c.Tq << "h" << c.Hq << "kv" << c.Hkv << "d" << c.D;
  return s.str();
}
void PrintTo(const GqaCase& c, std::ostream* os) { *os << name_of(c); }

class AttentionDecodeGqa : public ::testing::TestWithParam<GqaCase> {};

TEST_P(AttentionDecodeGqa, EveryKernelMatchesReferenceAtOddCacheLengths) {
  const GqaCase c = GetParam();
  int ran = 0;
  for (const AttnKernel& k : kernels::attn_kernels()) {
    if (!kernels::may_use(k.isa)) {
      std::cout << "[ SKIPPED  ] " << k.name << ": CPU lacks " << kernels::isa_name(k.isa) << "\n";
      continue;
    }
    const int KT = k.kv_tile;
    for (int Tk : {1, KT - 1, KT, KT + 1, 3 * KT + 5, 1031}) {
      if (Tk < c.Tq) continue;
      AttnData data(c.B, c.Tq, Tk, c.Hq, c.Hkv, c.D, /*seed=*/Tk * 31 + c.Hq * 7 + c.D);
      const double tol = kRelTol * data.max_abs_v();
      for (bool causal : {true, false}) {
        kernels::attention_reference(data.problem(causal, data.ref.data(), k.kv_type));
        // The keys ahead asked for into L1 and into L2 (whichever the plan would pick),
        // and a 16-bit cache also in the session's tiles, whose next tile is asked for
        // as this one's rows are read (scores_group and pv_group with requests).
        for (int threads : {1, 3})
          for (kernels::AttnAhead a : {kernels::AttnAhead::l1, kernels::AttnAhead::l2})
            for (bool tiled : {false, true}) {
              if (tiled && (k.kv_type == KvType::f32 || threads == 1)) continue;
              std::fill(data.out.begin(), data.out.end(), NAN);
              run_kernel(k, tiled ? data.tiled_problem(causal, data.out.data(), k.kv_type)
                                  : data.problem(causal, data.out.data(), k.kv_type),
                         threads, AttnPath::decode, a);
              EXPECT_LE(max_abs_diff(data.out, data.ref), tol)
                  << k.name << " Tk=" << Tk << (causal ? " causal" : " full") << " threads=" << threads
                  << (tiled ? " tiled" : "") << " ahead " << kernels::attn_ahead_name(a);
              ++ran;
            }
      }
    }
  }
  EXPECT_GT(ran, 0);
}

// How the decode path splits a token's keys (attention.cpp plan_attention): one chunk
// per thread of whole 16-key groups (four tasks per thread rounded to the 64-key tile
// left 2 threads at 528 keys five tasks of 128, 128, 128, 128 and 16 keys), and each
// thread's scratch and each task's partial states 4 KiB or more from another's (when
// adjacent, one core's prefetchers took the lines the other was writing: the call took
// ~1.7x as long).
TEST(AttentionDecodePlan, OneChunkPerThreadAndEachThreadsRegionsApart) {
  for (const AttnKernel& k : kernels::attn_kernels()) {
    AttnData data(1, 1, 528, 32, 8, 64, /*seed=*/1);
    const AttnProblem p = data.problem(true, data.out.data(), k.kv_type);
    const kernels::AttnPlan plan = kernels::plan_attention(k, p, 2, AttnPath::decode);
    EXPECT_EQ(plan.kv_chunks, 2) << k.name;
    EXPECT_EQ(plan.threads, 2) << k.name;
    EXPECT_EQ(plan.scratch_floats % 1024, 0u) << k.name;
    EXPECT_GE(plan.scratch_floats, kernels::decode_scratch_floats(k.kv_tile, 32, 64) + 1024) << k.name;
    const size_t task = plan.partial_floats / 2;
    EXPECT_EQ(task % 1024, 0u) << k.name;
    EXPECT_GE(task, size_t(32) * kernels::decode_part_floats(64) + 1024) << k.name;
    // Too few keys for two chunks of kMinChunkKeys: one chunk, one thread.
    AttnData short_data(1, 1, 100, 32, 8, 64, /*seed=*/2);
    const kernels::AttnPlan one =
        kernels::plan_attention(k, short_data.problem(true, short_data.out.data(), k.kv_type), 2, AttnPath::decode);
    EXPECT_EQ(one.kv_chunks, 1) << k.name;
    EXPECT_EQ(one.threads, 1) << k.name;
  }
}

// Where a decode plan asks for a tiled cache's next tile: the CPU's choice
// (cpu_attn_ahead: L2 on AMD family 19h, L1 elsewhere) unless a test or benchmark forces
// one; it never changes a result (the sweeps run both).
TEST(AttentionDecodePlan, AheadIsTheCpusUnlessForced) {
  unsigned family = 0, model = 0;
  const bool zen34 = kernels::amd_family_model(&family, &model) && family == 0x19;
  EXPECT_EQ(kernels::cpu_attn_ahead(), zen34 ? kernels::AttnAhead::l2 : kernels::AttnAhead::l1);
  const AttnKernel& k = kernels::attn_kernel(kernels::active_isa(), KvType::f16);
  AttnData data(1, 1, 528, 32, 8, 64, /*seed=*/3);
  const AttnProblem p = data.problem(true, data.out.data(), KvType::f16);
  EXPECT_EQ(kernels::plan_attention(k, p, 2, AttnPath::decode).ahead, kernels::cpu_attn_ahead());
  for (int v : {0, 1}) {
    kernels::set_attn_ahead_override(v);
    const kernels::AttnAhead want = v ? kernels::AttnAhead::l2 : kernels::AttnAhead::l1;
    EXPECT_EQ(kernels::cpu_attn_ahead(), want);
    EXPECT_EQ(kernels::plan_attention(k, p, 2, AttnPath::decode).ahead, want);
  }
  kernels::set_attn_ahead_override(-1);
  EXPECT_EQ(kernels::cpu_attn_ahead(), zen34 ? kernels::AttnAhead::l2 : kernels::AttnAhead::l1);
}

std::vector<GqaCase> cases() {
  std::vector<GqaCase> v;
  for (int G : {1, 2, 3, 4, 7, 8})
    for (int D : {64, 40}) v.push_back({1, 1, 2 * G, 2, D});
  v.push_back({1, 1, 32, 8, 64});   // llama-1b-like
  v.push_back({2, 1, 16, 2, 128});  // G = 8 at D 128 (accumulators split over d)
  v.push_back({1, 3, 8, 2, 64});    // 3 positions × G 4: blocks of 8 and 4 mix positions
  v.push_back({1, 5, 14, 2, 80});   // 5 × G 7 = 35 rows: 8·4 + 2 + 1
  v.push_back({1, 1, 32, 2, 64});   // G 16: one key per pass of scores_group on AVX-512
  v.push_back({1, 2, 8, 4, 128});   // G 2 at D 128: 8-vector accumulators, 2 positions
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionDecodeGqa, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GqaCase>& i) { return name_of(i.param); });

}  // namespace
}  // namespace headwise::test
