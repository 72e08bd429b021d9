// The one selection rule (kernels/registry.hpp) and the lists it reads: select() takes
// the first line whose ISA the requested ISA covers, and every list can serve every ISA
// (a scalar line per kind), so a plan never finds nothing to run.
#include <gtest/gtest.h>

#include <set>

#include "kernels/attention/attention.hpp"
#include "kernels/convert/kv_convert.hpp"
#include "kernels/elementwise/elementwise.hpp"
#include "kernels/matmul/linear.hpp"
#include "kernels/registry.hpp"

namespace headwise::kernels {
namespace {

struct Line {
  Isa isa;
  int id;
};

TEST(Registry, SelectTakesTheBestLineTheIsaCovers) {
  const Line all[] = {{Isa::avx512, 0}, {Isa::avx2, 1}, {Isa::scalar, 2}};
  EXPECT_EQ(select(kernel_list(all), Isa::avx512)->id, 0);
  EXPECT_EQ(select(kernel_list(all), Isa::avx2)->id, 1);
  EXPECT_EQ(select(kernel_list(all), Isa::scalar)->id, 2);
  // a list without an avx2 line: avx2 falls to scalar, never up to avx512
  const Line gap[] = {{Isa::avx512, 0}, {Isa::scalar, 2}};
  EXPECT_EQ(select(kernel_list(gap), Isa::avx2)->id, 2);
  // lines that do not accept the problem are passed over; none left: null
  auto odd = [](const Line& l) { return l.id % 2 == 1; };
  EXPECT_EQ(select(kernel_list(all), Isa::avx512, odd)->id, 1);
  EXPECT_EQ(select(kernel_list(all), Isa::scalar, odd), nullptr);
  const Line fast_only[] = {{Isa::avx512, 0}};
  EXPECT_EQ(select(kernel_list(fast_only), Isa::avx2), nullptr);
}

TEST(Registry, EveryIsaGetsALineOfItsOwnIsa) {
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::scalar}) {
    SCOPED_TRACE(isa_name(isa));
    EXPECT_EQ(elementwise_kernel(isa).isa, isa);
    EXPECT_EQ(kv_convert(isa).isa, isa);
    for (KvType t : {KvType::f32, KvType::f16, KvType::bf16}) {
      EXPECT_EQ(attn_kernel(isa, t).isa, isa);
      EXPECT_EQ(attn_kernel(isa, t).kv_type, t);
    }
  }
}

// The amx lines (attention.inc) are chosen only where AMX is usable: detected, the ISA
// avx512, not switched off; otherwise the avx512 vector line of the same type.
TEST(Registry, AmxLinesOnlyWhereAmxIsUsable) {
  int amx_lines = 0;
  for (const AttnKernel& k : attn_kernels()) amx_lines += k.unit == AttnUnit::amx;
  EXPECT_EQ(amx_lines, 2) << "one per 16-bit K/V type";
  ASSERT_TRUE(set_amx_override(amx_detected()));
  EXPECT_EQ(attn_kernel(Isa::avx512, KvType::f32).unit, AttnUnit::vec) << "an fp32 cache stays exact";
  ASSERT_TRUE(set_amx_override(false));
  for (KvType t : {KvType::f32, KvType::f16, KvType::bf16})
    EXPECT_EQ(attn_kernel(Isa::avx512, t).unit, AttnUnit::vec) << kv_type_name(t);
  const bool on = set_amx_override(true);
  EXPECT_EQ(on, amx_detected()) << "asking for AMX succeeds exactly where it is detected";
  for (KvType t : {KvType::f16, KvType::bf16}) {
    SCOPED_TRACE(kv_type_name(t));
    const AttnKernel& k = attn_kernel(Isa::avx512, t);
    EXPECT_EQ(k.unit, on && may_use(Isa::avx512) ? AttnUnit::amx : AttnUnit::vec);
    EXPECT_EQ(k.kv_type, t);
    EXPECT_EQ(attn_kernel(Isa::avx2, t).unit, AttnUnit::vec) << "an avx2 cap never reaches AMX";
  }
  if (on && may_use(Isa::avx512)) {  // capped below avx512 by the ISA override: off
    ASSERT_TRUE(set_isa_override(Isa::avx2));
    EXPECT_FALSE(amx_usable());
    clear_isa_override();
    EXPECT_TRUE(amx_usable());
  }
  clear_amx_override();
}

TEST(Registry, EveryKindHasAScalarLine) {
  auto has_scalar = [](auto list, auto same_kind) {
    for (const auto& e : list)
      if (e.isa == Isa::scalar && same_kind(e)) return true;
    return false;
  };
  auto any = [](const auto&) { return true; };
  EXPECT_TRUE(has_scalar(elementwise_kernels(), any));
  EXPECT_TRUE(has_scalar(kv_convert_kernels(), any));
  for (KvType t : {KvType::f32, KvType::f16, KvType::bf16})
    EXPECT_TRUE(has_scalar(attn_kernels(), [t](const AttnKernel& k) { return k.kv_type == t; })) << kv_type_name(t);
  for (int w = 0; w < int(WeightType::Count); ++w)
    EXPECT_TRUE(has_scalar(linear_kernels(), [w](const LinearKernel& k) { return int(k.type) == w; }))
        << weight_type_name(WeightType(w));
}

TEST(Registry, LineNamesAreUnique) {
  std::set<std::string> names;
  for (const ElemKernels& e : elementwise_kernels()) EXPECT_TRUE(names.insert(e.name).second) << e.name;
  for (const KvConvert& e : kv_convert_kernels()) EXPECT_TRUE(names.insert(e.name).second) << e.name;
  for (const AttnKernel& e : attn_kernels()) EXPECT_TRUE(names.insert(e.name).second) << e.name;
  for (const LinearKernel& e : linear_kernels()) EXPECT_TRUE(names.insert(e.symbol).second) << e.symbol;
}

}  // namespace
}  // namespace headwise::kernels
