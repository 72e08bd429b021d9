// Fuzz target: GPTQ/AWQ layers re-encoded as blocks (formats/hf_quantized.cpp), on the
// tensors of a safetensors file, as GPTQ 4-bit (groups of 32, zeros stored less 1), GPTQ
// 8-bit (one group per column) and AWQ 4-bit (groups of 64). Property: any file gives a
// Status, never a crash, hang or allocation past twice its size; every view it makes
// holds exactly its rows of blocks, and they dequantize.
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <vector>

#include "formats/hf_quantized.hpp"
#include "fuzz/fuzz_file.hpp"
#include "graph/weights.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headwise;
  using formats::HfQuantConfig;
  static fuzz::MemFile file("safetensors");
  std::unique_ptr<graph::SafetensorsFile> st;
  if (!graph::SafetensorsFile::open(file.write(data, size), &st).ok()) return 0;
  const HfQuantConfig configs[] = {{HfQuantConfig::Method::gptq, 4, 32, true},
                                   {HfQuantConfig::Method::gptq, 8, -1, true},
                                   {HfQuantConfig::Method::awq, 4, 64, false}};
  for (const HfQuantConfig& cfg : configs) {
    std::vector<graph::TensorView> views = st->tensors();
    std::deque<std::vector<uint8_t>> owned;
    if (!formats::convert_hf_quantized(cfg, "fuzz", 2 * uint64_t(size), &views, &owned).ok()) continue;
    size_t made = 0;
    for (const auto& o : owned) made += o.size();
    if (made > 2 * size) std::abort();
    float buf[32];
    for (const graph::TensorView& t : views) {
      if (!graph::dtype_is_block(t.dtype)) continue;
      if (t.shape.size() != 2 || t.nbytes != graph::dtype_row_bytes(t.dtype, t.shape[1]) * size_t(t.shape[0]))
        std::abort();
      fuzz::touch(t.data, t.nbytes);
      graph::to_f32(t.dtype, t.data, 32, buf);
    }
  }
  return 0;
}
