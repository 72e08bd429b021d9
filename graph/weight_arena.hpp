// The memory a plan's projections keep their own weight copies in (repacked panels,
// oneDNN's blocked f32 layout, 16-bit rows copied out of a file mapping): anonymous
// mappings advised as transparent huge pages, handed out in the order the plan makes
// the projections — the order a decode step runs them.
//
// Why one arena, not a mapping per projection: decode streams every weight once per
// token, and on 4 KiB pages that stream takes a TLB miss every 4 KiB (a two-level walk
// under a hypervisor). A mapping per projection gets huge pages only for its whole
// 2 MiB: llama-134m's 0.3-3 MB matrices were mostly on 4 KiB pages (120 of its 256 MiB
// of BF16 weights on huge pages). In chunks of 64 MiB every byte but a chunk's last
// partial huge page is on one, and a step's matrices follow each other in memory, so
// a thread's prefetch stream runs on into the next matrix instead of starting cold.
// Pages of a chunk past its last allocation are never touched, so they cost address
// space, not memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headwise::graph {

// `bytes` rounded up to whole 4 KiB pages, in an anonymous mapping of its own that
// starts on a 2 MiB boundary and is advised as huge pages from 2 MiB up; *mapped: the
// length to munmap. Null when the system has no memory for it.
void* map_huge(size_t bytes, size_t* mapped);

class WeightArena {
 public:
  static constexpr size_t kChunkBytes = size_t(64) << 20;

  WeightArena() = default;
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;
  ~WeightArena();  // unmaps every chunk: outlive whatever points into it

  // `bytes` of memory, 64-byte aligned, right after the previous allocation when it
  // fits in the current chunk; null when the system has no memory for a new chunk.
  void* allocate(size_t bytes);

  // Address space reserved (chunks) and handed out, in bytes.
  size_t mapped_bytes() const;
  size_t used_bytes() const;

 private:
  struct Chunk {
    uint8_t* p = nullptr;
    size_t len = 0;   // mapped
    size_t used = 0;  // handed out (64-byte aligned)
  };
  std::vector<Chunk> chunks_;
};

}  // namespace headwise::graph
