// hw_make_gguf HF_DIR OUT.gguf [VOCAB.gguf]: the tests' HF folder → GGUF through the
// library's writer (formats/hf_to_gguf.hpp), with a real vocabulary's tokenizer keys.
#include <cstdio>
#include <memory>

#include "formats/hf_to_gguf.hpp"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: hw_make_gguf HF_DIR OUT.gguf [VOCAB.gguf]\n");
    return 2;
  }
  std::unique_ptr<headwise::formats::GgufFile> vocab;
  if (argc == 4) {
    headwise::Status s = headwise::formats::GgufFile::open(argv[3], &vocab);
    if (!s.ok()) {
      std::fprintf(stderr, "hw_make_gguf: %s\n", s.message().c_str());
      return 1;
    }
  }
  headwise::Status s = headwise::formats::convert_hf_to_gguf(argv[1], vocab.get(), argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "hw_make_gguf: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
