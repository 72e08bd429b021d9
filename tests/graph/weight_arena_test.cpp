// graph::WeightArena: the plan's memory for its projections' weight copies.
#include "graph/weight_arena.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include <sys/mman.h>

#include "tests/test_files.hpp"

namespace headwise::graph {
namespace {

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(WeightArena, AllocationsFollowEachOtherOnAlignedMemory) {
  WeightArena arena;
  EXPECT_EQ(arena.mapped_bytes(), 0u);
  void* a = arena.allocate(1000);
  void* b = arena.allocate(5000);
  void* c = arena.allocate(3);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(addr(a) % (size_t(2) << 20), 0u) << "a chunk starts on a huge page";
  EXPECT_EQ(addr(b), addr(a) + 1024) << "64-byte aligned, right after the previous one";
  EXPECT_EQ(addr(c), addr(b) + 5056);
  EXPECT_EQ(arena.used_bytes(), 1024u + 5056u + 64u);
  EXPECT_EQ(arena.mapped_bytes(), WeightArena::kChunkBytes);
  // Writable, and what is written stays.
  std::memset(a, 0x11, 1000);
  std::memset(b, 0x22, 5000);
  std::memset(c, 0x33, 3);
  EXPECT_EQ(static_cast<uint8_t*>(a)[999], 0x11);
  EXPECT_EQ(static_cast<uint8_t*>(b)[0], 0x22);
  EXPECT_EQ(static_cast<uint8_t*>(c)[2], 0x33);
  // Only touched pages cost memory: the rest of the 64 MiB chunk is address space.
  const int64_t rss = test::resident_bytes_of_mapping(a);
  EXPECT_GT(rss, 0);
  EXPECT_LE(rss, int64_t(2) << 20);
}

TEST(WeightArena, WhatDoesNotFitStartsANewChunk) {
  WeightArena arena;
  void* a = arena.allocate(WeightArena::kChunkBytes - 4096);
  void* b = arena.allocate(8192);  // past the first chunk's end
  void* big = arena.allocate(WeightArena::kChunkBytes + 1);  // more than a chunk: one of its own
  ASSERT_TRUE(a && b && big);
  EXPECT_EQ(arena.mapped_bytes(), 2 * WeightArena::kChunkBytes + WeightArena::kChunkBytes + (size_t(2) << 20));
  EXPECT_EQ(addr(b) % (size_t(2) << 20), 0u);
  EXPECT_EQ(addr(big) % (size_t(2) << 20), 0u);
  static_cast<uint8_t*>(big)[WeightArena::kChunkBytes] = 7;  // its last byte is ours
  EXPECT_EQ(static_cast<uint8_t*>(big)[WeightArena::kChunkBytes], 7);
  EXPECT_EQ(arena.used_bytes(), (WeightArena::kChunkBytes - 4096) + 8192 + (WeightArena::kChunkBytes + 64));
}

TEST(WeightArena, MapHugeAlignsFromTwoMebibytes) {
  size_t mapped = 0;
  void* small = map_huge(5000, &mapped);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(mapped, 8192u);  // whole 4 KiB pages, no rounding up to a huge one
  munmap(small, mapped);
  void* large = map_huge((size_t(3) << 20) + 1, &mapped);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(addr(large) % (size_t(2) << 20), 0u);
  EXPECT_EQ(mapped, (size_t(3) << 20) + 4096);
  munmap(large, mapped);
}

}  // namespace
}  // namespace headwise::graph
