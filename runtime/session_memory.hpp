// The memory a session needs (KV cache, activation arena, logits), computed in 64 bits
// from the plan and checked against a limit before anything is allocated, so a model
// whose max_seq_len asks for terabytes is refused with the numbers instead of
// allocating until the machine swaps or the allocator throws.
#pragma once

#include <cstdint>

#include "headwise/status.hpp"

namespace headwise {
namespace graph {
struct Plan;
}

// OK when a session of `max_context` positions and `max_chunk` rows per step fits in
// `limit` bytes (0: available_memory_bytes()); else out_of_memory naming each part.
Status check_session_memory(const graph::Plan& plan, int max_context, int max_chunk,
                            bool all_logits, uint64_t limit);

}  // namespace headwise
