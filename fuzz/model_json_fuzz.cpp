// Fuzz target: the model description reader (graph/description.cpp, FORMAT.md).
// Property: any input gives a Status, never a crash, hang or huge allocation; and a
// description that parses writes back (description_to_json) to JSON that parses again
// to the same settings.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "graph/description.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headwise::graph;
  const std::string text(reinterpret_cast<const char*>(data), size);
  ModelDesc d;
  if (!parse_description(text, "fuzz/model.json", &d).ok()) return 0;
  const std::string again = description_to_json(d, "model.safetensors", "tokenizer.bin");
  ModelDesc e;
  const headwise::Status s = parse_description(again, "fuzz/again.json", &e);
  if (!s.ok()) {
    std::fprintf(stderr, "written description does not parse: %s\n%s\n", s.message().c_str(), again.c_str());
    std::abort();
  }
  const Settings &a = d.settings, &b = e.settings;
  if (a.vocab_size != b.vocab_size || a.d_model != b.d_model || a.n_layers != b.n_layers ||
      a.n_heads != b.n_heads || a.n_kv_heads != b.n_kv_heads || a.head_dim != b.head_dim ||
      a.max_seq_len != b.max_seq_len || a.norm_eps != b.norm_eps || a.rope_theta != b.rope_theta ||
      d.block.size() != e.block.size()) {
    std::fprintf(stderr, "written description reads back differently:\n%s\n", again.c_str());
    std::abort();
  }
  return 0;
}
