// Fuzz target: the safetensors reader (graph/safetensors_read.cpp). Property: any file
// gives a Status, never a crash, hang or huge allocation; every tensor it exposes lies
// inside the file and holds exactly numel × dtype size bytes.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_file.hpp"
#include "graph/weights.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headwise::graph;
  static headwise::fuzz::MemFile file("safetensors");
  std::unique_ptr<SafetensorsFile> st;
  if (!SafetensorsFile::open(file.write(data, size), &st).ok()) return 0;
  float buf[16];
  for (const TensorView& t : st->tensors()) {
    if (t.numel() < 0 || size_t(t.numel()) * dtype_size(t.dtype) != t.nbytes) std::abort();
    if (st->find(t.name) == nullptr) std::abort();
    headwise::fuzz::touch(t.data, t.nbytes);
    const size_t n = std::min<size_t>(16, size_t(t.numel()));
    to_f32(t.dtype, t.data, n, buf);
  }
  return 0;
}
