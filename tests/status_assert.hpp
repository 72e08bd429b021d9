// ASSERT/EXPECT that a headwise::Status is ok, printing the expression and the status's
// message when it is not (a bare ASSERT_TRUE(x.ok()) says only "false").
#pragma once

#include <gtest/gtest.h>

#include "headwise/status.hpp"

#define HW_ASSERT_OK(expr)                                                  \
  do {                                                                      \
    const ::headwise::Status hw_assert_status_ = (expr);                    \
    ASSERT_TRUE(hw_assert_status_.ok()) << #expr << ": " << hw_assert_status_.message(); \
  } while (0)

#define HW_EXPECT_OK(expr)                                                  \
  do {                                                                      \
    const ::headwise::Status hw_expect_status_ = (expr);                    \
    EXPECT_TRUE(hw_expect_status_.ok()) << #expr << ": " << hw_expect_status_.message(); \
  } while (0)
