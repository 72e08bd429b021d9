#include "graph/weight_arena.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace headwise::graph {
namespace {
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kPage = 4096;
}  // namespace

// A mapping, not malloc: freed memory goes back to the system whole (glibc would reuse
// and trim heap pages, splitting the huge ones), and the tail past the last whole 2 MiB
// stays on 4 KiB pages (no rounding up, no waste).
void* map_huge(size_t bytes, size_t* mapped) {
  const size_t len = (bytes + kPage - 1) / kPage * kPage;
  const size_t extra = len >= kHugePage ? kHugePage : 0;  // slack to align the start
  void* raw = mmap(nullptr, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* p = static_cast<uint8_t*>(raw);
  if (extra) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const size_t head = (kHugePage - a % kHugePage) % kHugePage;
    if (head) munmap(p, head);
    if (extra - head) munmap(p + head + len, extra - head);
    p += head;
    madvise(p, len, MADV_HUGEPAGE);  // advice: ignored where THP is off
  }
  *mapped = len;
  return p;
}

WeightArena::~WeightArena() {
  for (const Chunk& c : chunks_) munmap(c.p, c.len);
}

void* WeightArena::allocate(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  if (chunks_.empty() || chunks_.back().len - chunks_.back().used < bytes) {
    // A new chunk (the rest of the current one stays unused: never touched, no memory).
    Chunk c;
    const size_t want = std::max(kChunkBytes, (bytes + kHugePage - 1) / kHugePage * kHugePage);
    c.p = static_cast<uint8_t*>(map_huge(want, &c.len));
    if (!c.p) return nullptr;
    chunks_.push_back(c);
  }
  Chunk& c = chunks_.back();
  void* p = c.p + c.used;
  c.used += bytes;
  return p;
}

size_t WeightArena::mapped_bytes() const {
  size_t n = 0;
  for (const Chunk& c : chunks_) n += c.len;
  return n;
}

size_t WeightArena::used_bytes() const {
  size_t n = 0;
  for (const Chunk& c : chunks_) n += c.used;
  return n;
}

}  // namespace headwise::graph
