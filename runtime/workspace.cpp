#include "runtime/workspace.hpp"

#include <cstdlib>
#include <memory>

namespace headwise {
namespace {
struct Buffer {
  std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
  size_t capacity = 0;
};
}  // namespace

float* thread_workspace(size_t floats) {
  if (floats == 0) floats = 16;
  thread_local Buffer buf;
  if (floats > buf.capacity) {
    const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    buf.data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    buf.capacity = buf.data ? floats : 0;
  }
  return buf.data.get();
}

}  // namespace headwise
