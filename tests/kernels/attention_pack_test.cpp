// The amx lines' K and V packed once per call (AttnPackedKv, AttnKernel::pack): the plan
// packs where more than one query tile reads each key tile, up to kMaxPackedBytes, and a
// packed run gives exactly the bytes of an unpacked one (where each query tile converts
// its own key tiles) — for part-filled last tiles, GQA, padded batches, a chunk of
// queries whose causal end falls inside a key tile, both K/V layouts, and a problem past
// the cap, whose last key tiles are converted per query tile. attention_test holds the
// same lines, packed, to the float64 reference.
#include <cstring>

#include "tests/kernels/attention_cases.hpp"

namespace headwise::test {
namespace {

std::vector<const AttnKernel*> amx_lines() {
  std::vector<const AttnKernel*> out;
  for (const AttnKernel& k : kernels::attn_kernels())
    if (k.unit == kernels::AttnUnit::amx) out.push_back(&k);
  return out;
}

struct PackOff {  // plans built while it lives pack nothing
  PackOff() { kernels::set_attn_pack_override(false); }
  ~PackOff() { kernels::set_attn_pack_override(true); }
};

AttnProblem shape_only(int B, int Tq, int Tk, int Hq, int Hkv, int D, KvType kv) {
  AttnProblem p;
  p.batch = B, p.q_len = Tq, p.kv_len = Tk, p.q_heads = Hq, p.kv_heads = Hkv, p.head_dim = D;
  p.kv_type = kv;
  return p;
}

TEST(AttentionPack, PlansPackingWhereMoreThanOneQueryTileReadsAKeyTile) {
  ASSERT_EQ(amx_lines().size(), 2u);  // f16 and bf16 (attention.inc)
  for (const AttnKernel& k : kernels::attn_kernels()) {
    const bool amx = k.unit == kernels::AttnUnit::amx;
    EXPECT_EQ(k.pack != nullptr, amx) << k.name;
    // 512 queries: 4 query tiles of 128 read each key tile.
    kernels::AttnPlan plan = kernels::plan_attention(k, shape_only(1, 512, 512, 12, 12, 64, k.kv_type), 2,
                                                     AttnPath::prefill);
    if (!amx) {
      EXPECT_EQ(plan.packed_keys, 0) << k.name;
      EXPECT_EQ(plan.packed_floats, 0u) << k.name;
      continue;
    }
    const size_t tile = kernels::amx_packed_tile_floats(k.kv_tile, 64, k.kv_type);
    EXPECT_EQ(tile, (k.kv_type == KvType::bf16 ? 1u : 2u) * 64 * 64);
    EXPECT_EQ(plan.packed_keys, 512) << k.name;
    EXPECT_GE(plan.packed_floats, 12 * 8 * tile) << k.name;
    EXPECT_GE(plan.workspace_floats(), plan.scratch_floats * plan.threads + plan.packed_floats);
    // One query tile of one head per kv head: nothing to share.
    plan = kernels::plan_attention(k, shape_only(1, 100, 100, 4, 4, 64, k.kv_type), 2, AttnPath::prefill);
    EXPECT_EQ(plan.packed_keys, 0) << k.name;
    // ... but four heads of a GQA group read each key tile: 100 keys in 2 tiles.
    plan = kernels::plan_attention(k, shape_only(1, 100, 100, 8, 2, 64, k.kv_type), 2, AttnPath::prefill);
    EXPECT_EQ(plan.packed_keys, 128) << k.name;
    {
      PackOff off;
      plan = kernels::plan_attention(k, shape_only(1, 512, 512, 12, 12, 64, k.kv_type), 2, AttnPath::prefill);
      EXPECT_EQ(plan.packed_keys, 0) << k.name;
      EXPECT_EQ(plan.packed_floats, 0u) << k.name;
    }
    // The cap: 64 kv heads × 256 at 4096 keys would take 512 MiB (f16) or 256 MiB (bf16);
    // 64 MiB holds the first 8 (16) key tiles of every head.
    plan = kernels::plan_attention(k, shape_only(1, 4096, 4096, 64, 64, 256, k.kv_type), 2, AttnPath::prefill);
    EXPECT_EQ(plan.packed_keys, k.kv_type == KvType::bf16 ? 1024 : 512) << k.name;
    EXPECT_LE(plan.packed_floats * sizeof(float), (size_t(64) << 20) + 4096) << k.name;
  }
}

struct Shape {
  int B, Tq, Tk, Hq, Hkv, D;
  bool causal, padded;
};

// The output bytes of one run of k on p.
std::vector<float> run_bytes(AttnData& data, const AttnKernel& k, const AttnProblem& p, int threads) {
  std::fill(data.out.begin(), data.out.end(), NAN);
  run_kernel(k, p, threads, AttnPath::prefill);
  return data.out;
}

TEST(AttentionPack, PackedRunsGiveTheUnpackedRunsBytes) {
  if (!kernels::amx_usable()) GTEST_SKIP() << "no AMX here (or HEADWISE_AMX=0)";
  const Shape shapes[] = {
      {1, 300, 300, 4, 4, 64, true, false},    // a part-filled last key tile
      {1, 300, 300, 4, 4, 64, false, false},
      {2, 200, 200, 8, 2, 80, true, true},     // GQA, padded: 200 and 101 valid keys
      {1, 77, 1000, 8, 2, 128, true, false},   // a chunk: its causal end inside a key tile
      {1, 129, 129, 2, 1, 32, true, false},
      {1, 600, 600, 64, 64, 256, true, false},  // past the cap: keys 512.. (f16) unpacked
  };
  int compared = 0;
  for (const Shape& s : shapes) {
    AttnData data(s.B, s.Tq, s.Tk, s.Hq, s.Hkv, s.D, /*seed=*/s.Tq * 7 + s.D);
    if (s.padded) data.valid = {s.Tk, s.Tk / 2 + 1};
    for (const AttnKernel* k : amx_lines())
      for (bool tiled : {false, true})
        for (int threads : {1, 2}) {
          const AttnProblem p = tiled ? data.tiled_problem(s.causal, data.out.data(), k->kv_type)
                                      : data.problem(s.causal, data.out.data(), k->kv_type);
          const kernels::AttnPlan plan = kernels::plan_attention(*k, p, threads, AttnPath::prefill);
          ASSERT_GT(plan.packed_keys, 0) << k->name;
          if (s.Hkv == 64 && k->kv_type == KvType::f16) {
            EXPECT_LT(plan.packed_keys, s.Tk) << "the cap case packs only some keys";
          }
          const std::vector<float> packed = run_bytes(data, *k, p, threads);
          std::vector<float> unpacked;
          {
            PackOff off;
            unpacked = run_bytes(data, *k, p, threads);
          }
          const std::string what = std::string(k->name) + " b" + std::to_string(s.B) + " q" + std::to_string(s.Tq) +
                                   " k" + std::to_string(s.Tk) + " h" + std::to_string(s.Hq) + "/" +
                                   std::to_string(s.Hkv) + " d" + std::to_string(s.D) +
                                   (s.causal ? " causal" : " full") + (tiled ? " tiled" : "") +
                                   " threads=" + std::to_string(threads);
          ASSERT_EQ(packed.size(), unpacked.size());
          size_t differ = 0, nan = 0;
          for (size_t i = 0; i < packed.size(); ++i) {
            differ += std::memcmp(&packed[i], &unpacked[i], sizeof(float)) != 0;
            nan += std::isnan(packed[i]);
          }
          EXPECT_EQ(differ, 0u) << what;
          EXPECT_EQ(nan, 0u) << what << ": every output written";
          ++compared;
        }
  }
  EXPECT_EQ(compared, 6 * 2 * 2 * 2);
}

}  // namespace
}  // namespace headwise::test
