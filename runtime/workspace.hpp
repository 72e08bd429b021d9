// Per-thread, grow-only scratch memory for kernels called through the public API.
// Kernels never allocate; the API layer hands them this.
#pragma once

#include <cstddef>

namespace headwise {

// A 64-byte aligned buffer of at least `floats` floats, owned by the calling thread and
// valid until its next call. Returns nullptr when memory is exhausted.
float* thread_workspace(size_t floats);

}  // namespace headwise
