// How much memory this process could still get, for checks made before allocating
// something sized by a model file (RoPE tables, KV caches).
#pragma once

#include <cstdint>
#include <string>

namespace headwise::graph {

// MemAvailable of /proc/meminfo, or the physical memory when that cannot be read.
uint64_t available_memory_bytes();

// "123.4 MiB", for messages.
std::string mib_str(uint64_t bytes);

}  // namespace headwise::graph
