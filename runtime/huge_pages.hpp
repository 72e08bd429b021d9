// Allocation for large buffers (KV caches, activations, benchmark tensors): 2 MiB
// aligned and advised as transparent huge pages from 2 MiB up, 64-byte aligned below.
// Attention streams K and V once per query tile, and 4 KiB pages make that a TLB walk
// every few rows (~2% of a long prefill). Free with std::free.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>

namespace headwise {

inline void* alloc_maybe_huge(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t align = bytes >= kHuge ? kHuge : 64;
  const size_t rounded = bytes ? (bytes + align - 1) / align * align : 64;
  void* p = std::aligned_alloc(align, rounded);
  if (p && align == kHuge) madvise(p, rounded, MADV_HUGEPAGE);  // advice: ignored if THP is off
  return p;
}

}  // namespace headwise
