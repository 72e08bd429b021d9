// libFuzzer target for the GGUF reader: any bytes must parse or fail with a Status,
// never crash, read out of bounds or allocate beyond what the input could describe.
// On success every metadata value and tensor is walked so lazily read fields are
// touched too, each Q5_0 tensor is re-encoded as Q8_0 as the checkpoint loader does
// (formats/checkpoint_gguf.cpp), and each Q4_1 or Q5_1 tensor as Q8_0 plus offsets as the
// plan does (graph/projection_offsets.cpp), and dequantized (the embedding's and
// convert's reading); their bytes lie inside the input, so the copies are bounded by it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "formats/gguf.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<headwise::formats::GgufFile> f;
  if (!headwise::formats::GgufFile::parse(data, size, "fuzz.gguf", &f).ok()) return 0;
  volatile double sink = 0;
  for (const auto& [key, v] : f->metadata()) {
    sink = sink + static_cast<double>(key.size()) + v.type_str().size();
    if (v.is_numeric_array())
      for (uint64_t i = 0; i < v.count; ++i) sink = sink + v.float_at(i) + static_cast<double>(v.int_at(i));
    for (auto s : v.strings) sink = sink + (s.empty() ? 0 : s[0]);
  }
  for (const auto& t : f->tensors()) {
    if (t.nbytes) sink = sink + t.data[0] + t.data[t.nbytes - 1];
    if (t.type == 6 && t.nbytes) {  // ggml Q5_0
      namespace q = headwise::kernels::quant;
      const int64_t blocks = int64_t(t.nbytes / sizeof(q::BlockQ5_0));
      std::vector<uint8_t> q8(size_t(blocks) * sizeof(q::BlockQ8_0));
      q::q5_0_to_q8_0(t.data, q8.data(), blocks);
      sink = sink + q8[0] + q8[q8.size() - 1];
      std::vector<float> x(size_t(blocks) * q::kQK);
      q::dequantize_q5_0(t.data, x.data(), int64_t(x.size()));
      sink = sink + x[0];
    }
    if ((t.type == 3 || t.type == 7) && t.nbytes) {  // ggml Q4_1, Q5_1
      namespace q = headwise::kernels::quant;
      const auto wt = static_cast<q::WType>(t.type);
      const int64_t blocks = int64_t(t.nbytes / size_t(q::load_only_block_bytes(wt)));
      std::vector<uint8_t> q8(size_t(blocks) * sizeof(q::BlockQ8_0));
      std::vector<float> offsets(static_cast<size_t>(blocks)), x(static_cast<size_t>(blocks) * q::kQK);
      (wt == q::WType::q4_1 ? q::q4_1_to_q8_0 : q::q5_1_to_q8_0)(t.data, q8.data(), offsets.data(), blocks);
      (wt == q::WType::q4_1 ? q::dequantize_q4_1 : q::dequantize_q5_1)(t.data, x.data(), int64_t(x.size()));
      sink = sink + q8[0] + q8[q8.size() - 1] + offsets[0] + x[x.size() - 1];
    }
  }
  return 0;
}
