#include <gtest/gtest.h>
#include "headwise/headwise.h"
TEST(CApi, Isa) { EXPECT_STRNE(hw_isa(), ""); }
