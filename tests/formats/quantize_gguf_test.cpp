// `headwise convert --weights`'s choice of type per tensor (formats/quantize_gguf.hpp),
// checked against llama.cpp's rules as its llama-quant.cpp states them for the K-quant
// mixes: Q5_K_M is Q4_K_M with Q5_K as the base type (Q6_K for attn_v and ffn_down where
// use_more_bits(i, n): i < n/8, i >= 7n/8 or (i - n/8) % 3 == 2; Q6_K for the output
// matrix; the fused attn_qkv one type up: Q5_K under Q4_K_M, Q6_K under Q5_K_M), Q5_K_S
// all Q5_K but the output matrix (Q6_K); rows that are not whole 256-blocks fall back
// (headwise: Q8_0 when a multiple of 32, else F16; llama.cpp: Q5_1, then F16). Q3_K_M:
// Q3_K, attn_v Q5_K while i_attention_wv < 2 (layers 0 and 1) and Q4_K after, ffn_down
// Q5_K for i < n/16 and Q4_K after (any architecture but Falcon), attn_output and the
// fused attn_qkv Q4_K, the output matrix Q6_K; Q3_K_S all Q3_K but the output matrix;
// Q3_K rows that are not whole 256-blocks fall back to Q4_0 (both). IQ4_XS without an
// importance matrix: IQ4_XS, attn_v Q5_K where n_gqa >= 4, ffn_down Q5_K for i < n/8,
// the output matrix Q6_K; rows that are not whole 256-blocks fall back (headwise: Q8_0;
// llama.cpp: IQ4_NL, which headwise reads but does not write). Q2_K: Q2_K, attn_v Q4_K
// where n_gqa >= 4 and Q3_K elsewhere, ffn_down and attn_output Q3_K, the output matrix
// Q6_K; Q2_K rows that are not whole 256-blocks fall back to Q4_0 (both).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/quantize_gguf.hpp"

namespace headwise::formats {
namespace {

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
                   kIQ4_XS = 23;
const std::vector<int64_t> kMat = {512, 1024};  // ne: rows of 512 (two 256-blocks), 1024 rows

uint32_t type_of(const std::string& mix, const std::string& name, const std::vector<int64_t>& ne = kMat,
                 std::string* why = nullptr) {
  return choose_tensor_type(mix, name, ne, 32, why);
}

TEST(QuantizeGguf, Q5KMixesFollowLlamaCpp) {
  // 32 layers: n/8 = 4, so layers 0-3, 28-31 and 6, 9, ..., 27 get more bits
  for (int l = 0; l < 32; ++l) {
    const bool more = l < 4 || l >= 28 || (l - 4) % 3 == 2;
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of("q5_k_m", b + "attn_v.weight"), more ? kQ6_K : kQ5_K) << l;
    EXPECT_EQ(type_of("q5_k_m", b + "ffn_down.weight"), more ? kQ6_K : kQ5_K) << l;
    EXPECT_EQ(type_of("Q4_K_M", b + "ffn_down.weight"), more ? kQ6_K : kQ4_K) << l;
    for (const char* t : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"}) {
      EXPECT_EQ(type_of("q5_k_m", b + t), kQ5_K) << b + t;
      EXPECT_EQ(type_of("q5_k", b + t), kQ5_K) << b + t;
    }
    EXPECT_EQ(type_of("q5_k", b + "attn_v.weight"), kQ5_K) << l;
    EXPECT_EQ(type_of("q5_k_m", b + "attn_qkv.weight"), kQ6_K) << l;
    EXPECT_EQ(type_of("q4_k_m", b + "attn_qkv.weight"), kQ5_K) << l;
    EXPECT_EQ(type_of("q5_k_m", b + "attn_norm.weight", {512}), kF32) << l;
  }
  for (const char* mix : {"q5_k", "q5_k_m", "q4_k", "q4_k_m", "q4_0"}) {
    EXPECT_EQ(type_of(mix, "output.weight"), kQ6_K) << mix;
  }
  EXPECT_EQ(type_of("q6_k", "output.weight"), kQ6_K);
  EXPECT_EQ(type_of("q8_0", "output.weight"), kQ8_0);
  EXPECT_EQ(type_of("q5_k_m", "token_embd.weight"), kQ5_K);
  EXPECT_EQ(type_of("q5_k", "token_embd.weight"), kQ5_K);
}

TEST(QuantizeGguf, Q3KMixesFollowLlamaCpp) {
  // 32 layers: n/16 = 2
  for (int l = 0; l < 32; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of("q3_k_m", b + "attn_v.weight"), l < 2 ? kQ5_K : kQ4_K) << l;
    EXPECT_EQ(type_of("q3_k_m", b + "ffn_down.weight"), l < 2 ? kQ5_K : kQ4_K) << l;
    EXPECT_EQ(type_of("Q3_K_M", b + "attn_output.weight"), kQ4_K) << l;
    EXPECT_EQ(type_of("q3_k_m", b + "attn_qkv.weight"), kQ4_K) << l;
    for (const char* t : {"attn_q.weight", "attn_k.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(type_of("q3_k_m", b + t), kQ3_K) << b + t;
    for (const char* t : {"attn_q.weight", "attn_v.weight", "attn_output.weight", "ffn_down.weight"})
      EXPECT_EQ(type_of("q3_k", b + t), kQ3_K) << b + t;
    EXPECT_EQ(type_of("q3_k_m", b + "ffn_norm.weight", {512}), kF32) << l;
  }
  // 12 layers: n/16 = 0, so no ffn_down in Q5_K; attn_v still in the first two
  EXPECT_EQ(choose_tensor_type("q3_k_m", "blk.0.ffn_down.weight", kMat, 12, nullptr), kQ4_K);
  EXPECT_EQ(choose_tensor_type("q3_k_m", "blk.1.attn_v.weight", kMat, 12, nullptr), kQ5_K);
  for (const char* mix : {"q3_k", "q3_k_m"}) {
    EXPECT_EQ(type_of(mix, "output.weight"), kQ6_K) << mix;
    EXPECT_EQ(type_of(mix, "token_embd.weight"), kQ3_K) << mix;
  }
  std::string why;
  EXPECT_EQ(type_of("q3_k", "blk.0.attn_q.weight", {288, 64}, &why), kQ4_0);
  EXPECT_NE(why.find("fallback"), std::string::npos) << why;
  EXPECT_EQ(type_of("q3_k_m", "blk.9.attn_v.weight", {288, 64}), kQ8_0);  // its Q4_K's fallback
  EXPECT_EQ(type_of("q3_k_m", "blk.0.attn_q.weight", {100, 64}), kF16);
}

TEST(QuantizeGguf, Q2KMixFollowsLlamaCpp) {
  for (int l = 0; l < 32; l += 7) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of("q2_k", b + "attn_v.weight"), kQ3_K) << l;
    EXPECT_EQ(choose_tensor_type("Q2_K", b + "attn_v.weight", kMat, 32, nullptr, 4), kQ4_K) << l;
    EXPECT_EQ(type_of("q2_k", b + "ffn_down.weight"), kQ3_K) << l;
    EXPECT_EQ(type_of("q2_k", b + "attn_output.weight"), kQ3_K) << l;
    for (const char* t : {"attn_q.weight", "attn_k.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(type_of("q2_k", b + t), kQ2_K) << b + t;
  }
  EXPECT_EQ(type_of("q2_k", "output.weight"), kQ6_K);
  EXPECT_EQ(type_of("q2_k", "token_embd.weight"), kQ2_K);
  std::string why;
  EXPECT_EQ(type_of("q2_k", "blk.0.attn_q.weight", {288, 64}, &why), kQ4_0);  // as llama.cpp's
  EXPECT_NE(why.find("fallback"), std::string::npos) << why;
  EXPECT_EQ(type_of("q2_k", "blk.0.ffn_down.weight", {288, 64}), kQ4_0);  // its Q3_K's fallback
}

TEST(QuantizeGguf, Iq4XsMixFollowsLlamaCpp) {
  // 32 layers: n/8 = 4
  for (int l = 0; l < 32; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of("iq4_xs", b + "ffn_down.weight"), l < 4 ? kQ5_K : kIQ4_XS) << l;
    // attn_v: Q5_K only where 4 or more query heads share a key head
    EXPECT_EQ(type_of("iq4_xs", b + "attn_v.weight"), kIQ4_XS) << l;
    EXPECT_EQ(choose_tensor_type("IQ4_XS", b + "attn_v.weight", kMat, 32, nullptr, 4), kQ5_K) << l;
    EXPECT_EQ(choose_tensor_type("iq4_xs", b + "attn_v.weight", kMat, 32, nullptr, 2), kIQ4_XS) << l;
    for (const char* t : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight",
                          "attn_qkv.weight"})
      EXPECT_EQ(type_of("iq4_xs", b + t), kIQ4_XS) << b + t;
    EXPECT_EQ(type_of("iq4_xs", b + "attn_norm.weight", {512}), kF32) << l;
  }
  EXPECT_EQ(type_of("iq4_xs", "output.weight"), kQ6_K);
  EXPECT_EQ(type_of("iq4_xs", "token_embd.weight"), kIQ4_XS);
  std::string why;
  EXPECT_EQ(type_of("iq4_xs", "blk.9.attn_q.weight", {288, 64}, &why), kQ8_0);
  EXPECT_NE(why.find("fallback"), std::string::npos) << why;
  EXPECT_EQ(type_of("iq4_xs", "blk.9.attn_q.weight", {100, 64}), kF16);
}

TEST(QuantizeGguf, Q5KRowsThatAreNotWholeBlocksFallBack) {
  std::string why;
  EXPECT_EQ(type_of("q5_k", "blk.0.attn_q.weight", {64, 64}, &why), kQ8_0);
  EXPECT_NE(why.find("fallback"), std::string::npos) << why;
  EXPECT_EQ(type_of("q5_k_m", "blk.0.ffn_down.weight", {172, 64}), kF16);  // not whole 32-blocks either
  EXPECT_EQ(type_of("q5_k_m", "blk.5.attn_q.weight", {288, 64}), kQ8_0);
}

TEST(QuantizeGguf, F32MixKeepsEveryMatrixInF32) {
  std::string why;
  for (const char* t : {"output.weight", "token_embd.weight", "blk.0.attn_v.weight", "blk.3.ffn_down.weight"}) {
    EXPECT_EQ(type_of("f32", t, {256, 64}, &why), kF32) << t;
    EXPECT_NE(why.find("exact"), std::string::npos) << why;
  }
}

TEST(QuantizeGguf, MixNames) {
  for (const char* m : {"q5_k", "Q5_K", "q5_k_m", "Q5_K_M", "q4_k_m", "bf16", "q3_k", "Q3_K_M", "IQ4_XS", "Q2_K", "F32"})
    EXPECT_TRUE(valid_weight_mix(m)) << m;
  for (const char* m : {"q5_0", "q5_k_s", "q5", "q3_k_l", "q2_k_s", "iq4_nl", ""}) EXPECT_FALSE(valid_weight_mix(m)) << m;
  EXPECT_NE(std::string(weight_mixes_help()).find("q5_k|"), std::string::npos);
  EXPECT_NE(std::string(weight_mixes_help()).find("q5_k_m"), std::string::npos);
}

}  // namespace
}  // namespace headwise::formats
