// Fuzz target: the llama2.c checkpoint reader (graph/llama2c.cpp). Property: any file
// gives a Status, never a crash, hang or huge allocation; every tensor it exposes lies
// inside the file (read here byte by byte).
#include <cstdint>

#include "fuzz/fuzz_file.hpp"
#include "graph/weights.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headwise::graph;
  static headwise::fuzz::MemFile file("llama2c");
  std::unique_ptr<Llama2cCheckpoint> ck;
  if (!Llama2cCheckpoint::open(file.write(data, size), &ck).ok()) return 0;
  for (const TensorView& t : ck->tensors()) headwise::fuzz::touch(t.data, t.nbytes);
  return 0;
}
